package triggers

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet/fleettest"
)

// TestNameRegisteredOnDevChain runs the poller against the embedded dev
// chain through the real chain client: each registration fires once, the
// registry's code is observed without firing, and nothing fires twice.
func TestNameRegisteredOnDevChain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded dev chain")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	key, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wei := new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil)
	ch, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{{Address: key.Address(), Wei: wei}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	cl, err := chain.Dial(ctx, ch.URL(), chain.Options{ChainID: devchain.ChainID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	reg, _, err := cl.DeployNameRegistry(ctx, key)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	f := newFakeStarter()
	s := mustNew(t, Config{
		Specs: []Spec{
			{Specialist: "sec", Events: []string{EventNameRegistered}},
			{Specialist: "smoke", Events: []string{EventCodeChanged}},
		},
		Starter: f, Events: cl, Registry: reg.Address(), StateDir: dir,
		PollInterval: 20 * time.Millisecond, Logger: testLogger(t),
	})
	s.Start(ctx)
	fleettest.WaitFor(t, 10*time.Second, "the poller's first state", func() bool {
		_, err := os.Stat(filepath.Join(dir, stateFileName))
		return err == nil
	})

	names := []string{"alice", "bob", "carol"}
	for i, name := range names {
		if _, err := reg.Register(ctx, key, name); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
		fleettest.WaitFor(t, 10*time.Second, "the registration of "+name, func() bool { return s.Stats()["sec"].Events == int64(i+1) })
	}
	time.Sleep(20 * 20 * time.Millisecond) // twenty more polls
	want := []string{"event:name_registered x 1", "event:name_registered x 1", "event:name_registered x 1"}
	if diff := cmp.Diff(want, f.Reasons("sec")); diff != "" {
		t.Errorf("sec (-want +got):\n%s", diff)
	}
	if got := f.Reasons("smoke"); len(got) != 0 {
		t.Errorf("code_changed fired %v for code that never changed", got)
	}
}
