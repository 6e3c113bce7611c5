package fuzzing

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAppendStatsNewCoverageAndPlateau(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "go-0123456789abcdef")
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		rep         Tally
		wantNew     bool
		wantPlateau int
	}{
		{Tally{Engine: EngineLibFuzzer, Execs: 3000, Elapsed: time.Second, Coverage: 100, Features: 300, CorpusSize: 10}, true, 0},
		{Tally{Engine: EngineLibFuzzer, Execs: 3000, Elapsed: time.Second, Coverage: 100, Features: 300, CorpusSize: 10}, false, 1},
		{Tally{Engine: EngineGo, Execs: 900, Elapsed: time.Second}, true, 0}, // another engine's first session
		{Tally{Engine: EngineLibFuzzer, Execs: 3000, Elapsed: time.Second, Coverage: 90, Features: 290, CorpusSize: 10}, false, 2},
		{Tally{Engine: EngineLibFuzzer, Execs: 3000, Elapsed: time.Second, Coverage: 101, Features: 300, CorpusSize: 11,
			Crashers: []Crasher{{State: "panic: x\nf.go:1"}, {State: "panic: x\nf.go:1"}, {State: "hang: <a>"}}}, true, 0},
	}
	for i, s := range steps {
		l, plateau, err := AppendStats(dir, StatsLineOf(&s.rep, "FuzzParse", t0.Add(time.Duration(i)*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		if l.NewCoverage != s.wantNew || plateau != s.wantPlateau {
			t.Errorf("session %d: new coverage %v, plateau %d; want %v, %d", i, l.NewCoverage, plateau, s.wantNew, s.wantPlateau)
		}
	}
	// Every engine's current plateau, for a scheduler: libfuzzer's last
	// session found coverage; go's one session did too; a fresh dir has none.
	if _, _, err := AppendStats(dir, StatsLine{Time: t0.Add(5 * time.Minute), Engine: EngineGo, Execs: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := EnginePlateaus(dir); err != nil || !cmp.Equal(got, map[string]int{EngineLibFuzzer: 0, EngineGo: 1}) {
		t.Errorf("engine plateaus %v (%v), want libfuzzer 0, go 1", got, err)
	}
	if got, err := EnginePlateaus(t.TempDir()); err != nil || len(got) != 0 {
		t.Errorf("no statistics: %v %v", got, err)
	}
	series, err := ReadStats(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].Engine != EngineGo || series[1].Engine != EngineLibFuzzer {
		t.Fatalf("series: %+v", series)
	}
	lf := series[1]
	if lf.Key != "go-0123456789abcdef" || lf.Target != "FuzzParse" || len(lf.Points) != 4 {
		t.Fatalf("libfuzzer series: %+v", lf)
	}
	if got := lf.Last().ExecsPerSec; got != 3000 {
		t.Errorf("execs/s %d, want 3000 (from execs and elapsed)", got)
	}
	if got, want := lf.LastNewCoverage(), t0.Add(4*time.Minute); !got.Equal(want) {
		t.Errorf("last new coverage %v, want %v", got, want)
	}
	want := []StateCount{{State: "panic: x\nf.go:1", Sessions: 1, Last: t0.Add(4 * time.Minute)}, {State: "hang: <a>", Sessions: 1, Last: t0.Add(4 * time.Minute)}}
	if diff := cmp.Diff(want, lf.CrashStates()); diff != "" {
		t.Errorf("crash states (-want +got):\n%s", diff)
	}
}

func TestAppendStatsBounded(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxStatsLines {
		l, _ := json.Marshal(StatsLine{Time: t0.Add(time.Duration(i) * time.Second), Engine: "builtin", Execs: i})
		b.Write(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, StatsFile), b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := AppendStats(dir, StatsLine{Time: t0.Add(time.Hour), Engine: "builtin", Execs: -1}); err != nil {
		t.Fatal(err)
	}
	lines, err := readStatsFile(filepath.Join(dir, StatsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != keepStatsLines {
		t.Fatalf("%d lines after the rewrite, want %d", len(lines), keepStatsLines)
	}
	if lines[len(lines)-1].Execs != -1 || lines[0].Execs != maxStatsLines+1-keepStatsLines {
		t.Errorf("kept lines %d..%d, want the newest", lines[0].Execs, lines[len(lines)-1].Execs)
	}
}

func TestParseStatsSkipsTornAndForeignLines(t *testing.T) {
	in := `{"time":"2025-03-01T00:00:00Z","engine":"libfuzzer","coverage":5,"new_coverage":true}
not json
{"time":"2025-03-01T00:01:00Z"}
{"engine":"go"}

{"time":"2025-03-01T00:02:00Z","engine":"go","execs":9}
{"time":"2025-03-01T00:03:00Z","engine":"go","ex`
	got, err := ParseStats(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Coverage != 5 || got[1].Execs != 9 {
		t.Fatalf("got %+v", got)
	}
}

func TestReadStatsMissingDir(t *testing.T) {
	s, err := ReadStats(filepath.Join(t.TempDir(), "nope"))
	if err != nil || s != nil {
		t.Fatalf("ReadStats of a missing dir: %v, %v", s, err)
	}
}

// FuzzParseStats: the stats file is written by fleetd but read back from
// disk, where a crash, another version or a hand edit may have left
// anything. Whatever it reads must write back and read the same.
func FuzzParseStats(f *testing.F) {
	f.Add([]byte(`{"time":"2025-03-01T00:00:00Z","engine":"libfuzzer","crash_states":["panic: x"]}` + "\n"))
	f.Add([]byte("{\"time\":\"2025-03-01T00:00:00Z\",\"engine\":\"go\"}\n{\"time\":"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, err := ParseStats(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		for _, l := range lines {
			if l.Time.IsZero() || l.Engine == "" || len(l.CrashStates) > maxStatesLine {
				t.Fatalf("kept a line it should not: %+v", l)
			}
			j, err := json.Marshal(l)
			if err != nil {
				return // a time json cannot write (year out of range) is read but not rewritten
			}
			out.Write(j)
			out.WriteByte('\n')
		}
		again, err := ParseStats(&out)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(lines) {
			t.Fatalf("read %d lines, wrote and read back %d", len(lines), len(again))
		}
	})
}
