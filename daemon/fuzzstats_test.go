package daemon

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fuzzing"
)

// writeFuzzStats keeps three libfuzzer sessions (the last on a plateau,
// with a crash) and one builtin session for one target.
func writeFuzzStats(t *testing.T) (string, time.Time) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fuzz")
	key := fuzzing.TargetKey("go", "repo", "pkg", "FuzzParse")
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	reps := []fuzzing.Tally{
		{Engine: fuzzing.EngineLibFuzzer, Execs: 60000, Elapsed: 20 * time.Second, ExecsPerSec: 3000, Coverage: 100, Features: 300, CorpusSize: 10},
		{Engine: fuzzing.EngineLibFuzzer, Execs: 64000, Elapsed: 20 * time.Second, ExecsPerSec: 3200, Coverage: 140, Features: 380, CorpusSize: 14},
		{Engine: fuzzing.EngineLibFuzzer, Execs: 62000, Elapsed: 20 * time.Second, CPU: 31 * time.Second, ExecsPerSec: 3100, Coverage: 140, Features: 380, CorpusSize: 14,
			Crashers: []fuzzing.Crasher{{State: "panic: boom\nparse.go:12"}}},
		{Engine: fuzzing.EngineBuiltin, Execs: 3000, Elapsed: 20 * time.Second, CorpusSize: 9, NewInputs: 2},
	}
	for i, r := range reps {
		if _, _, err := fuzzing.AppendStats(filepath.Join(dir, key), fuzzing.StatsLineOf(&r, "FuzzParse", t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	return dir, t0
}

func TestConsoleFuzzStats(t *testing.T) {
	dir, t0 := writeFuzzStats(t)
	fs := ConsoleFuzzStats(dir)
	if len(fs) != 2 || fs[0].Engine != fuzzing.EngineBuiltin || fs[1].Engine != fuzzing.EngineLibFuzzer {
		t.Fatalf("fuzz stats: %+v", fs)
	}
	lf := fs[1]
	if lf.Target != "FuzzParse" || lf.Sessions != 3 || lf.ExecsPerSec != 3100 || lf.ExecsPerCPUSec != 2000 || lf.Coverage != 140 || lf.CorpusSize != 14 ||
		!lf.NewCoverage.Equal(t0.Add(time.Minute)) || len(lf.Crashes) != 1 || len(lf.Points) != 3 || lf.Points[1].Coverage != 140 {
		t.Errorf("libfuzzer: %+v", lf)
	}
	if b := fs[0]; b.ExecsPerSec != 150 || len(b.Points) != 1 || b.Points[0].Coverage != 9 {
		t.Errorf("builtin (inputs/s from execs and elapsed, the corpus plotted): %+v", b)
	}
	if ConsoleFuzzStats(filepath.Join(dir, "nope")) == nil {
		t.Error("want an empty list, not nil, for no statistics")
	}
}

func TestMetricsFuzzStats(t *testing.T) {
	dir, t0 := writeFuzzStats(t)
	ms := MetricsFuzzStats(dir, t0.Add(10*time.Minute))
	if len(ms) != 2 {
		t.Fatalf("%+v", ms)
	}
	if lf := ms[1]; lf.SinceNewCoverage != 9*time.Minute || lf.CrashStates != 1 || lf.ExecsPerSec != 3100 || lf.Features != 380 {
		t.Errorf("libfuzzer: %+v", lf)
	}
}
