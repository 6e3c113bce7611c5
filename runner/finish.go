package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/qatools"
)

// Finish is Recover again and again, with backoff, until no run is left
// open in dataDir or ctx ends. It is for a process about to stop (the
// daemon's Shutdown, `fleetd probe` and `fleetd mcp` when a run's cleanup
// failed once: a reset answer to a release, a funding the node had not
// mined when the cleanup looked). Nothing else would finish such a run
// until the next start, and never for a user who stops fleetd for good.
// A run that waits for a funding that may still land gets the sponsor's
// nonce settled once (qatools.SettleFundings): nothing else from the
// sponsor would take it now.
//
// The Recovery it returns holds every run a pass closed, the runs still
// open as the last pass found them, and every record closed with a footer;
// its Err is the last pass's, joined with a failed settle's.
func Finish(ctx context.Context, env *Env, dataDir, by string) Recovery {
	var out Recovery
	wait := 250 * time.Millisecond
	settled := false
	var settleErr error
	for {
		r := Recover(ctx, env, dataDir, by)
		out.Footers = append(out.Footers, r.Footers...)
		var open []qatools.Reconciled
		for _, c := range r.Runs {
			if c.Closed {
				out.Runs = append(out.Runs, c)
			} else {
				open = append(open, c)
			}
		}
		if len(open) == 0 {
			out.Err = r.Err
			return out
		}
		if !settled && fundingInFlight(r) && env != nil && env.Env != nil {
			// A funding the node never took keeps its run open until the
			// sponsor sends again: send once, then look again at once.
			settled = true
			if settleErr = qatools.SettleFundings(ctx, env.Env); settleErr == nil {
				continue
			}
			settleErr = fmt.Errorf("settle the sponsor's fundings: %w", settleErr)
		}
		select {
		case <-time.After(wait):
			wait = min(2*wait, 2*time.Second)
			continue
		case <-ctx.Done():
		}
		out.Runs = append(out.Runs, open...)
		out.Err = errors.Join(r.Err, settleErr)
		return out
	}
}

// fundingInFlight reports whether a run r left open waits for a funding
// that may still land (qatools.ErrFundingInFlight).
func fundingInFlight(r Recovery) bool {
	for _, c := range r.Runs {
		if !c.Closed && errors.Is(c.Err, qatools.ErrFundingInFlight) {
			return true
		}
	}
	return false
}
