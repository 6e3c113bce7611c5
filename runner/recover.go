package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// Recovery is what the recovery of crashed runs did in one data dir: the
// sandboxes reconciled (or still holding names), the run records closed
// with a footer.
type Recovery struct {
	Runs    []qatools.Reconciled
	Footers []string // run ids whose record got a harness_error footer
	Err     error
}

// Held lists the names still held after reconciliation, "name (run)".
func (r Recovery) Held() []string {
	var out []string
	for _, c := range r.Runs {
		for _, n := range c.Held {
			out = append(out, fmt.Sprintf("%s (run %s)", n, c.RunID))
		}
	}
	return out
}

// Closed counts the sandboxes reconciliation closed.
func (r Recovery) Closed() int {
	n := 0
	for _, c := range r.Runs {
		if c.Closed {
			n++
		}
	}
	return n
}

// Recover finishes what crashed runs left in dataDir, for the daemon at
// start, `fleetd probe`, `fleetd tool call` and `fleetd reconcile`: every sandbox
// without a closed marker and not held by a live process is reconciled
// (names released, keys swept, qatools.Reconcile), and every run record
// without a footer whose run is not live gets a harness_error footer saying
// why (trajectory.Recover), the reconciled runs' included. by names who
// recovered it, for the footer ("fleetd reconcile").
func Recover(ctx context.Context, env *Env, dataDir, by string) Recovery {
	var r Recovery
	var errs []error
	base := SandboxDir(dataDir)
	if env != nil && env.Env != nil {
		var err error
		r.Runs, err = qatools.Reconcile(ctx, env.Env, base)
		if err != nil {
			errs = append(errs, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dataDir, trajectory.RunsDir, "*.jsonl"))
	for _, f := range files {
		s, err := trajectory.Summary(f)
		if err != nil || s.Outcome != trajectory.OutcomeCrashed || sandbox.Live(base, s.RunID) {
			continue
		}
		ok, err := trajectory.Recover(f, "the process running it died; recovered by "+by)
		if err != nil {
			errs = append(errs, fmt.Errorf("recover run record %s: %w", s.RunID, err))
			continue
		}
		if ok {
			r.Footers = append(r.Footers, s.RunID)
		}
	}
	r.Err = errors.Join(errs...)
	return r
}

// SandboxDir is where the runs of dataDir keep their sandboxes.
func SandboxDir(dataDir string) string { return filepath.Join(dataDir, "qa-sandbox") }

// LeftOpen reports whether run runID left its sandbox in dataDir open: its
// cleanup failed, so its names stay held and its keys funded until a
// reconcile (Recover, Finish) finishes it. A run that never opened one
// (it never started) left nothing.
func LeftOpen(dataDir, runID string) bool {
	if !sandbox.ValidRunID(runID) {
		return false
	}
	base := SandboxDir(dataDir)
	if _, err := os.Stat(filepath.Join(base, runID)); err != nil {
		return false
	}
	return !sandbox.Closed(base, runID)
}
