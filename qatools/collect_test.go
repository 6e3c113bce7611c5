package qatools

import (
	"context"
	"errors"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// refusingReporter takes the first finding and refuses the rest.
type refusingReporter struct{ n int }

func (r *refusingReporter) Report(_ context.Context, f fleet.Finding) (poster.Result, error) {
	r.n++
	if r.n > 1 {
		return poster.Result{}, errors.New("log refused")
	}
	return poster.Result{Status: poster.Queued, FP: fleet.Fingerprint(f)}, nil
}

// TestCollectorKeepsWhatWasReported: holding, every finding is kept and
// answered Held with its fingerprint; forwarding, only what the forward
// took is kept, and its answer and error are the caller's.
func TestCollectorKeepsWhatWasReported(t *testing.T) {
	a := fleet.Finding{Source: "qa-smoke", Severity: fleet.SeverityLow, Surface: fleet.SurfaceCompiler, Summary: "a"}
	b := fleet.Finding{Source: "qa-smoke", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler, Summary: "b"}
	hold := &Collector{}
	for _, f := range []fleet.Finding{a, b} {
		res, err := hold.Report(context.Background(), f)
		if err != nil || res.Status != Held || res.FP != fleet.Fingerprint(f) {
			t.Fatalf("holding %q: %+v, %v", f.Summary, res, err)
		}
	}
	if got := hold.Found(); len(got) != 2 || got[0].Summary != "a" || got[1].Summary != "b" {
		t.Fatalf("held %+v; want a, b", got)
	}
	fwd := &Collector{Forward: &refusingReporter{}}
	if res, err := fwd.Report(context.Background(), a); err != nil || res.Status != poster.Queued {
		t.Fatalf("forwarded a: %+v, %v", res, err)
	}
	if _, err := fwd.Report(context.Background(), b); err == nil {
		t.Fatal("the forward's refusal was swallowed")
	}
	if got := fwd.Found(); len(got) != 1 || got[0].Summary != "a" {
		t.Fatalf("forwarding kept %+v; want only a", got)
	}
}
