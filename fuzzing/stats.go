package fuzzing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// StatsFile is the name of a target's session statistics in its corpus
// directory: one JSON line per session (StatsLine), appended by the
// session's caller, so a target's figures survive restarts and are shared
// by every process using the data dir.
const StatsFile = "stats.jsonl"

// Stats file bounds: a file over maxStatsLines lines is rewritten with its
// newest keepStatsLines; ParseStats reads at most maxStatsBytes.
const (
	maxStatsLines  = 1000
	keepStatsLines = 750
	maxStatsBytes  = 4 << 20
	maxStatesLine  = 8   // crash states kept per line
	maxStateLen    = 240 // bytes of a crash state kept
)

// StatsLine is one fuzz session's figures. Coverage and Features are the
// coverage-guided engines' (edges, and libFuzzer's features); for the other
// engines they are zero and NewInputs (new behaviours kept) stands in.
type StatsLine struct {
	Time        time.Time `json:"time"` // the session's end
	Engine      string    `json:"engine"`
	Target      string    `json:"target,omitempty"` // the readable name: the fuzz target, or "compiler"
	Execs       int       `json:"execs"`
	ElapsedMS   int64     `json:"elapsed_ms"`
	ExecsPerSec int       `json:"execs_per_sec"`
	// CPUMS is the fuzzing's processor time (Tally.CPU); 0 = not measured.
	CPUMS      int64 `json:"cpu_ms,omitempty"`
	Coverage   int   `json:"coverage,omitempty"`
	Features   int   `json:"features,omitempty"`
	CorpusSize int   `json:"corpus_size"`
	NewInputs  int   `json:"new_inputs,omitempty"`
	// NewCoverage: the session kept new inputs or passed the engine's best
	// coverage or features so far on this target.
	NewCoverage bool     `json:"new_coverage"`
	CrashStates []string `json:"crash_states,omitempty"` // distinct states of its crashers
}

// StatsLineOf returns the line for one session's report, ended at now
// (NewCoverage is set by AppendStats).
func StatsLineOf(rep *Tally, target string, now time.Time) StatsLine {
	l := StatsLine{Time: now.UTC(), Engine: rep.Engine, Target: target, Execs: rep.Execs, ElapsedMS: rep.Elapsed.Milliseconds(), CPUMS: rep.CPU.Milliseconds(),
		ExecsPerSec: rep.ExecsPerSec, Coverage: rep.Coverage, Features: rep.Features, CorpusSize: rep.CorpusSize, NewInputs: rep.NewInputs}
	if l.ExecsPerSec == 0 && rep.Elapsed > 0 {
		l.ExecsPerSec = int(float64(rep.Execs) / rep.Elapsed.Seconds())
	}
	for _, c := range rep.Crashers {
		s := clipState(c.State)
		if s != "" && !slices.Contains(l.CrashStates, s) && len(l.CrashStates) < maxStatesLine {
			l.CrashStates = append(l.CrashStates, s)
		}
	}
	return l
}

func clipState(s string) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
	if len(s) <= maxStateLen {
		return s
	}
	n := maxStateLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// AppendStats appends l to dir's stats file, first setting l.NewCoverage
// from the engine's earlier lines, and returns the line written and how
// many sessions in a row (this one included) the engine has run on this
// target without new coverage (0 when this one found some). A file past
// maxStatsLines is rewritten (atomically) with its newest lines; a
// concurrent append during that rewrite may be lost, which costs one
// session's figures. Not fsynced: the figures are advisory. The error
// names the file.
func AppendStats(dir string, l StatsLine) (StatsLine, int, error) {
	p := filepath.Join(dir, StatsFile)
	old, err := readStatsFile(p)
	if err != nil {
		return l, 0, err
	}
	bestCov, bestFeat, seen := 0, 0, false
	for _, o := range old {
		if o.Engine == l.Engine {
			bestCov, bestFeat, seen = max(bestCov, o.Coverage), max(bestFeat, o.Features), true
		}
	}
	l.NewCoverage = !seen || l.NewInputs > 0 || l.Coverage > bestCov || l.Features > bestFeat
	plateau := 0
	if !l.NewCoverage {
		plateau = 1
		for i := len(old) - 1; i >= 0; i-- {
			if old[i].Engine != l.Engine {
				continue
			}
			if old[i].NewCoverage {
				break
			}
			plateau++
		}
	}
	line, err := json.Marshal(l)
	if err != nil {
		return l, 0, fmt.Errorf("fuzz stats: %w", err)
	}
	line = append(line, '\n')
	if len(old)+1 > maxStatsLines {
		var b bytes.Buffer
		for _, o := range old[len(old)+1-keepStatsLines:] {
			ob, _ := json.Marshal(o)
			b.Write(ob)
			b.WriteByte('\n')
		}
		b.Write(line)
		if err := writeAtomic(p, b.Bytes()); err != nil {
			return l, 0, fmt.Errorf("fuzz stats: %w", err)
		}
		return l, plateau, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return l, 0, fmt.Errorf("fuzz stats: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return l, 0, fmt.Errorf("fuzz stats: %w", err)
	}
	_, werr := f.Write(line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return l, 0, fmt.Errorf("fuzz stats %s: %w", p, werr)
	}
	return l, plateau, nil
}

// EnginePlateaus reads dir's statistics and returns, per engine, how many
// sessions in a row (its newest ones) found no new coverage: what a
// scheduler needs to leave an engine on a plateau alone without running it
// first. A missing file is no engines.
func EnginePlateaus(dir string) (map[string]int, error) {
	lines, err := readStatsFile(filepath.Join(dir, StatsFile))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	done := map[string]bool{}
	for i := len(lines) - 1; i >= 0; i-- {
		e := lines[i].Engine
		if done[e] {
			continue
		}
		if lines[i].NewCoverage {
			done[e] = true
			out[e] += 0
			continue
		}
		out[e]++
	}
	return out, nil
}

// readStatsFile parses p; a missing file is no lines.
func readStatsFile(p string) ([]StatsLine, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fuzz stats: %w", err)
	}
	defer f.Close()
	lines, err := ParseStats(f)
	if err != nil {
		return nil, fmt.Errorf("fuzz stats %s: %w", p, err)
	}
	return lines, nil
}

// ParseStats reads a stats file: its complete lines that decode to a
// session with a time and an engine, in order. A last line without its
// newline (torn by a crash mid-append), a line that does not decode, and
// anything past the first 4 MiB are ignored; the error is the reader's.
func ParseStats(r io.Reader) ([]StatsLine, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxStatsBytes))
	if err != nil {
		return nil, err
	}
	var out []StatsLine
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // torn or cut: ignored
		}
		raw := bytes.TrimSpace(b[:i])
		b = b[i+1:]
		var l StatsLine
		if len(raw) == 0 || json.Unmarshal(raw, &l) != nil || l.Time.IsZero() || l.Engine == "" || !utf8.ValidString(l.Engine) {
			continue
		}
		if len(l.CrashStates) > maxStatesLine {
			l.CrashStates = l.CrashStates[:maxStatesLine]
		}
		for i, s := range l.CrashStates {
			l.CrashStates[i] = clipState(s)
		}
		l.Target = clipState(l.Target)
		out = append(out, l)
	}
	return out, nil
}

// Series is one target's sessions with one engine, oldest first.
type Series struct {
	Key    string // the corpus directory's name (TargetKey)
	Engine string
	Target string // the newest line's readable name
	Points []StatsLine
}

// Last is the newest session.
func (s Series) Last() StatsLine { return s.Points[len(s.Points)-1] }

// LastNewCoverage is the end of the newest session that found new
// coverage; zero when none did.
func (s Series) LastNewCoverage() time.Time {
	for i := len(s.Points) - 1; i >= 0; i-- {
		if s.Points[i].NewCoverage {
			return s.Points[i].Time
		}
	}
	return time.Time{}
}

// StateCount is a crash state and the sessions that found it.
type StateCount struct {
	State    string
	Sessions int
	Last     time.Time
}

// CrashStates returns the distinct crash states of the series, the most
// often found first.
func (s Series) CrashStates() []StateCount {
	idx := map[string]int{}
	var out []StateCount
	for _, p := range s.Points {
		for _, st := range p.CrashStates {
			i, ok := idx[st]
			if !ok {
				i = len(out)
				idx[st] = i
				out = append(out, StateCount{State: st})
			}
			out[i].Sessions++
			out[i].Last = p.Time
		}
	}
	slices.SortStableFunc(out, func(a, b StateCount) int { return b.Sessions - a.Sessions })
	return out
}

// ReadStats reads every target's stats file under fuzzDir (the data dir's
// fuzz/, one directory per target key) and returns one series per target
// and engine, by key then engine. A missing fuzzDir is no series; an
// unreadable file is skipped and named in the joined error, the others
// still returned.
func ReadStats(fuzzDir string) ([]Series, error) {
	ents, err := os.ReadDir(fuzzDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fuzz stats: %w", err)
	}
	var out []Series
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		lines, err := readStatsFile(filepath.Join(fuzzDir, e.Name(), StatsFile))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		byEngine := map[string]int{}
		var ss []Series
		for _, l := range lines {
			i, ok := byEngine[l.Engine]
			if !ok {
				i = len(ss)
				byEngine[l.Engine] = i
				ss = append(ss, Series{Key: e.Name(), Engine: l.Engine})
			}
			ss[i].Points = append(ss[i].Points, l)
			if l.Target != "" {
				ss[i].Target = l.Target
			}
		}
		slices.SortFunc(ss, func(a, b Series) int { return strings.Compare(a.Engine, b.Engine) })
		out = append(out, ss...)
	}
	return out, errors.Join(errs...)
}
