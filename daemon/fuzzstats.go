package daemon

import (
	"time"

	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/httpapi"
)

// maxFuzzPoints bounds the coverage points per target and engine handed to
// the console (its plot samples them further).
const maxFuzzPoints = 240

// ConsoleFuzzStats reads the kept fuzz statistics for the Fleet page. A
// target whose file cannot be read is left out (the others still show).
func ConsoleFuzzStats(fuzzDir string) []console.FuzzStats {
	series, _ := fuzzing.ReadStats(fuzzDir)
	out := make([]console.FuzzStats, 0, len(series))
	for _, s := range series {
		l := s.Last()
		f := console.FuzzStats{Key: s.Key, Engine: s.Engine, Target: s.Target, Sessions: len(s.Points), ExecsPerSec: l.ExecsPerSec,
			Coverage: l.Coverage, Features: l.Features, CorpusSize: l.CorpusSize, Last: l.Time, NewCoverage: s.LastNewCoverage()}
		if l.CPUMS > 0 {
			f.ExecsPerCPUSec = int(float64(l.Execs) * 1000 / float64(l.CPUMS))
		}
		for _, c := range s.CrashStates() {
			f.Crashes = append(f.Crashes, console.FuzzCrash{State: c.State, Sessions: c.Sessions})
		}
		pts := s.Points[max(0, len(s.Points)-maxFuzzPoints):]
		for _, p := range pts {
			// One measure per series, the newest session's: edges, else
			// features, else the corpus (engines without coverage).
			v := p.CorpusSize
			switch {
			case l.Coverage > 0:
				v = p.Coverage
			case l.Features > 0:
				v = p.Features
			}
			f.Points = append(f.Points, console.FuzzPoint{Time: p.Time, Coverage: v})
		}
		out = append(out, f)
	}
	return out
}

// MetricsFuzzStats reads the kept fuzz statistics for /metrics.
func MetricsFuzzStats(fuzzDir string, now time.Time) []httpapi.FuzzStat {
	series, _ := fuzzing.ReadStats(fuzzDir)
	out := make([]httpapi.FuzzStat, 0, len(series))
	for _, s := range series {
		l := s.Last()
		st := httpapi.FuzzStat{Target: s.Key, Engine: s.Engine, Sessions: len(s.Points), ExecsPerSec: float64(l.ExecsPerSec),
			Coverage: l.Coverage, Features: l.Features, CorpusSize: l.CorpusSize, SinceNewCoverage: -1, CrashStates: len(s.CrashStates())}
		if t := s.LastNewCoverage(); !t.IsZero() {
			st.SinceNewCoverage = max(now.Sub(t), 0)
		}
		if l.CPUMS > 0 {
			st.ExecsPerCPUSec = float64(l.Execs) * 1000 / float64(l.CPUMS)
		}
		out = append(out, st)
	}
	return out
}
