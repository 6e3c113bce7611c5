//go:build k8scluster

package cluster

import (
	"context"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// chainSide is what the history checker reads the chain with.
type chainSide struct {
	RPC, FeedbackLog             string
	Registries                   []string // one per testbed
	FleetKeyFile, SponsorKeyFile string
}

// readHistory reads the chain half of the history after the faults: every
// qa/v1 finding the fleet identity put on the log, by fingerprint; every
// throwaway key the sponsor funded (the funding transactions' markers,
// chain.FundingsBy, as the reconcile CronJob finds them), derived again
// from the sponsor key, with its balance now and each name registered to
// it with its owner now. acks comes from the probe pods' logs.
func readHistory(t *testing.T, c chainSide, acks map[string]acked) history {
	t.Helper()
	ctx := context.Background()
	cl, err := chain.Dial(ctx, c.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fleetKey, err := chain.LoadKey(c.FleetKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	sponsor, err := chain.LoadKey(c.SponsorKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	h := history{PerFP: map[string]int{}, Acked: acks}
	logAddr, err := fleet.ParseAddress(c.FeedbackLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.FeedbackLog(logAddr).Scan(ctx, 0, func(p []chain.Entry) error {
		for _, e := range p {
			if e.Sender != fleetKey.Address() {
				continue
			}
			if fd, err := fleet.Parse(e.Text); err == nil && fd.Fingerprint != "" {
				h.PerFP[fd.Fingerprint]++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fundings, err := cl.FundingsBy(ctx, sponsor.Address(), 0, head)
	if err != nil {
		t.Fatal(err)
	}
	var regs []*chain.Registry
	for _, r := range c.Registries {
		a, err := fleet.ParseAddress(r)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, cl.Registry(a))
	}
	seen := map[string]bool{}
	for _, f := range fundings {
		id := f.Run + "#" + f.To.String()
		if seen[id] {
			continue
		}
		seen[id] = true
		key, err := chain.DeriveThrowawayKey(sponsor, f.Run, f.N)
		if err != nil {
			t.Fatal(err)
		}
		if key.Address() != f.To {
			t.Errorf("history: funding %s of run %s #%d went to %s, not the derived key %s", f.Tx, f.Run, f.N, f.To, key.Address())
		}
		k := throwaway{Run: f.Run, N: f.N, Addr: key.Address().String(), Names: map[string]string{}}
		if k.Wei, err = cl.Balance(ctx, key.Address()); err != nil {
			t.Fatal(err)
		}
		for _, reg := range regs {
			names, err := reg.NamesRegisteredTo(ctx, key.Address(), 0, head)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				owner, err := reg.OwnerOf(ctx, n)
				if err != nil {
					t.Fatal(err)
				}
				k.Names[n] = owner.String()
			}
		}
		h.Keys = append(h.Keys, k)
	}
	return h
}
