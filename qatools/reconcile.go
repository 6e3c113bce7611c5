package qatools

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/sandbox"
)

// Stranded is what ReconcileChain found and did for one run.
type Stranded struct {
	Run      string
	Keys     int      // throwaway keys the sponsor funded for it
	Released []string // names it released
	Held     []string // names a run key still owns: their release failed (the key is left funded)
	Swept    *big.Int // wei swept back to the sponsor
	Skipped  string   // why the run was left alone, if it was
}

// runTimeRE reads the start time out of a run id (sandbox.NewRunID).
var runTimeRE = regexp.MustCompile(`^r-(\d{8}-\d{6})-`)

// RunStarted returns the start time encoded in a run id, false when the id
// has none (a run id made elsewhere).
func RunStarted(run string) (time.Time, bool) {
	m := runTimeRE.FindStringSubmatch(run)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102-150405", m[1])
	return t, err == nil
}

// ReconcileChain finds from the chain alone the runs whose throwaway keys
// still hold funds or names, and cleans them up: every funding the sponsor
// sent in blocks [from, to] (chain.FundingsBy) names a run and a key index;
// the key is derived again from the sponsor's secret; names registered to it
// that it still owns are released and its balance swept to the sponsor. A run
// that may still be live is skipped: one whose id says it started less than
// minAge before now, or that live says is running (a sandbox on this disk
// holding its lock). It is idempotent and needs no data dir of the runs.
func ReconcileChain(ctx context.Context, env *Env, from, to uint64, minAge time.Duration, now time.Time, live func(run string) bool) ([]Stranded, error) {
	if env.Chain == nil || env.Sponsor == nil {
		return nil, errors.New("reconcile from the chain: needs chain.rpc and chain.sponsor_key_file")
	}
	fundings, err := env.Chain.FundingsBy(ctx, env.Sponsor.Address(), from, to)
	if err != nil {
		return nil, err
	}
	byRun := map[string][]chain.Funding{}
	for _, f := range fundings {
		byRun[f.Run] = append(byRun[f.Run], f)
	}
	runs := make([]string, 0, len(byRun))
	for r := range byRun {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	ctx = context.WithValue(ctx, cleanupKey{}, true) // releases and sweeps pass the dial
	var out []Stranded
	var errs []error
	for _, run := range runs {
		st := Stranded{Run: run, Swept: new(big.Int)}
		seen := map[int]bool{}
		for _, f := range byRun[run] {
			if !seen[f.N] {
				seen[f.N] = true
				st.Keys++
			}
		}
		started, ok := RunStarted(run)
		switch {
		case !sandbox.ValidRunID(run):
			st.Skipped = "not a fleetd run id"
		case ok && now.Sub(started) < minAge:
			st.Skipped = fmt.Sprintf("started %s ago: may still be running", now.Sub(started).Round(time.Second))
		case live != nil && live(run):
			st.Skipped = "running on this machine"
		}
		if st.Skipped != "" {
			out = append(out, st)
			continue
		}
		for n := range seen {
			key, err := chain.DeriveThrowawayKey(env.Sponsor, run, n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			holds := false
			if env.Registry != nil {
				names, err := env.Registry.NamesRegisteredTo(ctx, key.Address(), from, to)
				if err != nil {
					errs = append(errs, fmt.Errorf("reconcile %s: %w", run, err))
					holds = true // unknown: keep its gas for a later pass
				}
				for _, name := range names {
					if owner, err := env.Registry.OwnerOf(ctx, name); err == nil && owner != key.Address() {
						continue // released already, or no longer ours to touch
					}
					state, attempts, err := releaseName(ctx, env, run, n, key, sandbox.LedgerEntry{Name: name, State: sandbox.StateMinted})
					if err != nil {
						errs = append(errs, fmt.Errorf("reconcile %s: release %s (%d attempts): %w", run, name, attempts, err))
						st.Held = append(st.Held, name)
						holds = true
						continue
					}
					if state == sandbox.StateReleased {
						st.Released = append(st.Released, name)
					}
				}
			}
			if holds {
				continue // never sweep a key that still holds a name
			}
			_, wei, err := env.Chain.SweepAll(ctx, key, env.Sponsor.Address())
			if err != nil {
				errs = append(errs, fmt.Errorf("reconcile %s: %w", run, err))
				continue
			}
			st.Swept.Add(st.Swept, wei)
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

// Stranded reports whether the run held anything when reconciled.
func (s Stranded) Stranded() bool {
	return len(s.Released) > 0 || len(s.Held) > 0 || s.Swept.Sign() > 0
}
