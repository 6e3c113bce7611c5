package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"go.yaml.in/yaml/v3"
)

// TestSpecialistSetRoundTrip: the published record reads back as the same
// set (lines, rung, hash), fits the log's size limit with the built-in
// personas, and another kind of entry is not a set.
func TestSpecialistSetRoundTrip(t *testing.T) {
	ps, err := specialistCommands{&app{cfg: &Config{}}}.loadPersonas()
	if err != nil {
		t.Fatal(err)
	}
	set := fleetdaemon.NewSpecialistSet(ps, fleet.Exercise)
	text, err := set.Text()
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.CheckText(text); err != nil {
		t.Fatalf("the record does not fit the log: %v (%d bytes)", err, len(text))
	}
	got, hash, ok := fleetdaemon.ParseSpecialistSet(text)
	if !ok || hash != set.Hash() || got.Rung != "exercise" || len(got.Lines) != len(ps) || got.Hash() != set.Hash() {
		t.Fatalf("round trip: ok=%v hash %s want %s, %+v\n%s", ok, hash, set.Hash(), got, text)
	}
	for _, other := range []string{"qa/v1 source=qa-triage sev=meta surface=fleet kind=meta\nsummary", "free text", ""} {
		if _, _, ok := fleetdaemon.ParseSpecialistSet(other); ok {
			t.Errorf("%q read as a set", other)
		}
	}
	// A changed prompt, tool or rung is a different set.
	ps[0].Prompt += " More."
	if fleetdaemon.NewSpecialistSet(ps, fleet.Exercise).Hash() == set.Hash() || fleetdaemon.NewSpecialistSet(ps[:1], fleet.Exercise).Hash() == set.Hash() ||
		fleetdaemon.NewSpecialistSet(ps, fleet.Observe).Hash() == fleetdaemon.NewSpecialistSet(ps, fleet.Exercise).Hash() {
		t.Error("a changed set keeps its hash")
	}
}

// TestSpecialistsPublished: the daemon publishes its specialists when it
// starts; `fleetd specialists --on-chain` says they match; a persona edited
// and reloaded is published anew (and matches again); a config whose set
// the daemon does not run differs and exits 1.
func TestSpecialistsPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon against a dev chain")
	}
	hour := fleet.Trigger{Every: time.Hour} // no run fires during the test
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{"smoke": hour, "ux": hour, "security": hour, "perf": hour, "fuzz": hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := startTestDaemon(t, ctx, f.config)
	cl, err := chain.Dial(ctx, f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	log := cl.FeedbackLog(mustParseAddr(t, f.dn.Info.FeedbackLog))
	fleetKey, err := chain.LoadKey(f.dn.Info.FleetKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	waitSet := func(not string) *fleetdaemon.Published {
		t.Helper()
		var pub *fleetdaemon.Published
		fleettest.WaitFor(t, 30*time.Second, "a published set", func() bool {
			pub, _ = fleetdaemon.NewestPublished(ctx, log, fleetKey.Address())
			return pub != nil && pub.Hash != not
		})
		return pub
	}
	first := waitSet("")
	if len(first.Set.Lines) != 5 || first.Set.Rung != "observe" {
		t.Errorf("published set: %+v", first.Set)
	}
	o, e, code := run(t, "", "specialists", "--on-chain", "--config", f.config)
	if code != 0 || !strings.Contains(o, "on chain: matches") {
		t.Fatalf("--on-chain after start: exit %d\n%s%s", code, o, e)
	}
	// The console's fleet view says so too.
	var fl struct {
		Published *struct {
			Set     string
			Matches bool
			Entry   uint64
		}
	}
	fleettest.WaitFor(t, 10*time.Second, "the console's published set", func() bool {
		resp, err := http.Get(d.base + "/api/fleet")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&fl)
		return fl.Published != nil
	})
	if !fl.Published.Matches || fl.Published.Set != first.Hash || fl.Published.Entry != first.Index {
		t.Errorf("/api/fleet published: %+v, want set %s at entry %d", *fl.Published, first.Hash, first.Index)
	}

	// Edit a persona and reload: a new set is published.
	p := filepath.Join(f.dataDir, "personas", "smoke.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var smoke fleet.Persona
	if err := yaml.Unmarshal(b, &smoke); err != nil {
		t.Fatal(err)
	}
	smoke.Goal += " Also watch the new page."
	if b, err = yaml.Marshal(smoke); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	o, e, code = run(t, "", "specialists", "--on-chain", "--config", f.config)
	if code != 1 || !strings.Contains(o, "DIFFERS") || !strings.Contains(o, "differs: smoke") {
		t.Errorf("--on-chain with an edited persona not yet reloaded: exit %d\n%s%s", code, o, e)
	}
	d.reload <- struct{}{}
	second := waitSet(first.Hash)
	if second.Index <= first.Index {
		t.Errorf("second set at entry %d, first at %d", second.Index, first.Index)
	}
	o, e, code = run(t, "", "specialists", "--on-chain", "--json", "--config", f.config)
	if code != 0 || !strings.Contains(o, `"matches": true`) {
		t.Errorf("--on-chain --json after the reload: exit %d\n%s%s", code, o, e)
	}
	cancel()
	if c := <-d.done; c != 0 {
		t.Errorf("fleetd run exited %d:\n%s", c, tail(d.errb.String(), 20))
	}
	// The daemon's restart with the same set posts nothing new.
	n, _ := log.Count(context.Background())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel2()
	Main(ctx2, []string{"run", "--config", f.config}, strings.NewReader(""), d.out, d.errb)
	if m, _ := log.Count(context.Background()); m != n {
		t.Errorf("a restart with the same set posted %d entries", m-n)
	}
}
