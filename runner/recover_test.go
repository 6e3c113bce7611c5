package runner

import (
	"context"
	"slices"
	"testing"

	"github.com/qafleet/fleetd/trajectory"
)

// TestRecoverClosesACrashedRecord: a run record without a footer whose run
// is not live gets a harness_error footer naming who recovered it, once.
func TestRecoverClosesACrashedRecord(t *testing.T) {
	dir := t.TempDir()
	const id = "r-20261206-000000-abcdef"
	w, err := trajectory.Create(dir, id, trajectory.Header{RunID: id, Specialist: "smoke", HarnessVersion: HarnessVersion, Dial: "observe"})
	if err != nil {
		t.Fatal(err)
	}
	_ = w // the process "dies" here: no footer is written
	r := Recover(context.Background(), nil, dir, "the test")
	if r.Err != nil || !slices.Equal(r.Footers, []string{id}) || len(r.Runs) != 0 {
		t.Fatalf("recovery %+v, want the record closed", r)
	}
	run, err := trajectory.ReadAll(trajectory.Path(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	if run.Footer == nil || run.Footer.Outcome != trajectory.OutcomeHarnessError || run.Footer.FinalSummary != trajectory.RecoveredSummary {
		t.Fatalf("footer %+v, want recovery's", run.Footer)
	}
	if again := Recover(context.Background(), nil, dir, "the test"); len(again.Footers) != 0 || again.Err != nil {
		t.Errorf("a second recovery: %+v, want nothing to do", again)
	}
}
