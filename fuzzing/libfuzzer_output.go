package fuzzing

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/sandbox"
)

// LibFuzzerStats is what libFuzzer's output says about a session: its
// status lines ("#N NEW cov: X ft: Y corp: A/Bb ... exec/s: Z", and in fork
// mode "#N: cov: X ft: Y corp: A exec/s: Z ..."), the INITED line (what the
// session started from) and the final statistics of -print_final_stats.
type LibFuzzerStats struct {
	Execs        int   // inputs run: the last status line's #N, or stat::number_of_executed_units
	ExecsPerSec  int   // the last exec/s, or stat::average_exec_per_sec
	Coverage     int   // cov: edges (inline 8-bit counters) covered
	Features     int   // ft: coverage features, with -use_value_profile=1 comparison operands too
	CorpusInputs int   // corp: inputs in the in-memory corpus
	CorpusBytes  int64 // corp: their total size
	Inited       int   // corp: at INITED: inputs the session started from
	InitedCov    int   // cov: at INITED: what the starting corpus (the seeds among it) covers
	NewUnits     int   // NEW lines, or stat::new_units_added
	PeakRSSMB    int
}

// LibFuzzerCrash is one failure libFuzzer reported: its kind ("deadly
// signal", "timeout", "out-of-memory", "fuzz target exited", ...), the
// target's output that came before the report (where a Go panic and its
// stack are) with the report's own lines, and the artifact it saved.
type LibFuzzerCrash struct {
	Kind     string
	Report   []byte
	Artifact string
	Execs    int // the status line count before it
}

var (
	lfStatus   = regexp.MustCompile(`^#(\d+)\s+(?:(INITED|NEW|REDUCE|pulse|DONE|RELOAD)\s+)?(.*)$`)
	lfFork     = regexp.MustCompile(`^#(\d+): (cov: .*)$`)
	lfField    = regexp.MustCompile(`(cov|ft|corp|exec/s|rss): (\d+)(?:/(\d+)([kKmM]?)b)?`)
	lfError    = regexp.MustCompile(`^==\d+== ERROR: libFuzzer: (.*)$`)
	lfArtifact = regexp.MustCompile(`Test unit written to (\S+)`)
	lfStat     = regexp.MustCompile(`^stat::([a-z_]+):\s+(\d+)`)
)

// ParseLibFuzzer reads libFuzzer's output (stdout and stderr together, in
// order). It never panics on any input (fuzzed) and looks at most at the
// first 16 MiB.
func ParseLibFuzzer(out []byte) (LibFuzzerStats, []LibFuzzerCrash) {
	if len(out) > 16<<20 {
		out = out[:16<<20]
	}
	var st LibFuzzerStats
	var crashes []LibFuzzerCrash
	lines := bytes.Split(out, []byte("\n"))
	start := 0 // first line of the target output that may belong to the next crash
	var cur *LibFuzzerCrash
	for i, raw := range lines {
		l := strings.TrimRight(string(raw), "\r")
		if m := lfError.FindStringSubmatch(l); m != nil {
			kind := m[1]
			switch {
			case strings.HasPrefix(kind, "timeout"):
				kind = "timeout"
			case strings.HasPrefix(kind, "out-of-memory"), strings.HasPrefix(kind, "malloc"):
				kind = "out-of-memory"
			}
			crashes = append(crashes, LibFuzzerCrash{Kind: kind, Execs: st.Execs})
			cur = &crashes[len(crashes)-1]
			lo := start
			// An ALARM line belongs to the timeout report, not the target.
			report := bytes.Join(lines[lo:i+1], []byte("\n"))
			cur.Report = append([]byte(nil), report...)
			start = i + 1
			continue
		}
		if m := lfArtifact.FindStringSubmatch(l); m != nil {
			if cur != nil && cur.Artifact == "" {
				cur.Artifact = m[1]
			}
			start = i + 1
			continue
		}
		if m := lfStat.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			switch m[1] {
			case "number_of_executed_units":
				st.Execs = max(st.Execs, n)
			case "average_exec_per_sec":
				st.ExecsPerSec = n
			case "new_units_added":
				st.NewUnits = max(st.NewUnits, n)
			case "peak_rss_mb":
				st.PeakRSSMB = n
			}
			start = i + 1
			continue
		}
		fields, kind := "", ""
		if m := lfStatus.FindStringSubmatch(l); m != nil && strings.Contains(m[3], "cov: ") {
			n, _ := strconv.Atoi(m[1])
			st.Execs = max(st.Execs, n)
			fields, kind = m[3], m[2]
		} else if m := lfFork.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			st.Execs = max(st.Execs, n)
			fields = m[2]
		} else {
			if isLibFuzzerInfo(l) {
				start = i + 1
			}
			continue
		}
		start = i + 1
		if kind == "NEW" {
			st.NewUnits++
		}
		for _, f := range lfField.FindAllStringSubmatch(fields, -1) {
			n, _ := strconv.Atoi(f[2])
			switch f[1] {
			case "cov":
				st.Coverage = n
				if kind == "INITED" {
					st.InitedCov = n
				}
			case "ft":
				st.Features = n
			case "corp":
				st.CorpusInputs = n
				if f[3] != "" {
					b, _ := strconv.ParseInt(f[3], 10, 64)
					switch f[4] {
					case "k", "K":
						b <<= 10
					case "m", "M":
						b <<= 20
					}
					st.CorpusBytes = b
				}
				if kind == "INITED" {
					st.Inited = n
				}
			case "exec/s":
				st.ExecsPerSec = n
			case "rss":
				st.PeakRSSMB = max(st.PeakRSSMB, n)
			}
		}
	}
	return st, crashes
}

// isLibFuzzerInfo reports whether a line is libFuzzer's own chatter rather
// than the target's output.
func isLibFuzzerInfo(l string) bool {
	for _, p := range []string{"INFO: ", "MERGE-", "CRASH_MIN: ", "Done ", "Running: ", "Executed ", "***", "MS: ", "Base64: "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// outcome classifies a reported failure the way Classify classifies one
// run: a timeout is a hang, out-of-memory (libFuzzer's RSS or malloc limit,
// or the Go runtime's own report) resource exhaustion, a deadly signal or
// an unexpected exit a crash.
func (c LibFuzzerCrash) outcome() string {
	r := &sandbox.ExecResult{ExitCode: 1, Stderr: c.Report}
	switch c.Kind {
	case "timeout":
		r.TimedOut = true
	case "deadly signal":
		r.Signal = "aborted"
	default:
		r.ExitCode = 128 // an exit, leak or overwritten input: libFuzzer calls it a crash
	}
	return Classify(r)
}

// state is the crash state of a reported failure: a hang's is its input's
// shape (goInput: the `go test fuzz v1` form, as the go engine's replay
// computes it), a crash's the Go panic (or test failure) in the output
// before the report, harness frames dropped, else libFuzzer's own words.
func (c LibFuzzerCrash) state(outcome string, goInput []byte) string {
	if outcome == TimedOut {
		return HangState(goInput)
	}
	out := dropHarnessFrames(c.Report)
	st := ParseCrash(out)
	if st.IsZero() && bytes.Contains(out, []byte("--- FAIL")) {
		st = goFailureState(out)
	}
	if st.IsZero() {
		st = State{Kind: "libfuzzer", Message: "libFuzzer: " + mask(c.Kind)}
	}
	return st.String()
}

// The harness's own lines: the panic site it prints above a crash, and a
// crash at a known site that it passed over (see FLEETD_KNOWN_SITES in
// libfuzzer_harness.go).
var (
	siteLine   = regexp.MustCompile(`(?m)^fleetd-site: (\S.*?)\r?$`)
	passedLine = regexp.MustCompile(`(?m)^fleetd-passed-over: (\S.*?)\r?$`)
)

// reportedSite is the panic site the harness printed in out ("" for none).
func reportedSite(out []byte) string {
	if m := siteLine.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// dropHarnessFrames removes the generated harness's stack frames (a
// function line and its file line) from Go traces, so the top frames are
// the target's as go test shows them, and the harness's own lines.
func dropHarnessFrames(out []byte) []byte {
	lines := bytes.Split(out, []byte("\n"))
	kept := make([][]byte, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		if bytes.HasPrefix(lines[i], []byte("fleetd-site: ")) || bytes.HasPrefix(lines[i], []byte("fleetd-passed-over: ")) {
			continue
		}
		if i+1 < len(lines) {
			file := lines[i+1]
			if (bytes.Contains(file, []byte(harnessMain)) || bytes.Contains(file, []byte(harnessTesting))) &&
				goFrame.Match(bytes.TrimSpace(lines[i])) {
				i++
				continue
			}
		}
		kept = append(kept, lines[i])
	}
	return bytes.Join(kept, []byte("\n"))
}
