package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/trajectory"
)

// RunSummary is one run in the list.
type RunSummary struct {
	RunID      string    `json:"run_id"`
	Specialist string    `json:"specialist"`
	Outcome    string    `json:"outcome"` // "crashed" also means "no footer yet"
	Live       bool      `json:"live"`    // in flight in this daemon
	Turns      int       `json:"turns"`
	Findings   int       `json:"findings"`
	DurationMS int64     `json:"duration_ms"`
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
}

// TimelineRow is one line of a run's timeline: a turn or a disabled tool.
type TimelineRow struct {
	Kind      string    `json:"kind"` // "turn" or "tool_disabled"
	Index     int       `json:"index"`
	Time      time.Time `json:"time,omitzero"`
	Tool      string    `json:"tool,omitempty"`
	Verdict   string    `json:"verdict,omitempty"` // ok, error, refused, invalid, done
	Reason    string    `json:"reason,omitempty"`
	LatencyMS int64     `json:"latency_ms"`
	Args      string    `json:"args,omitempty"`   // clipped
	Detail    string    `json:"detail,omitempty"` // the salient result fields, clipped
	Findings  int       `json:"findings,omitempty"`
}

// RunDetail is one run: its summary, header, timeline, footer and, for
// programs, its raw records.
type RunDetail struct {
	Summary  RunSummary                `json:"summary"`
	Header   trajectory.Header         `json:"header"`
	Timeline []TimelineRow             `json:"timeline"`
	Footer   *trajectory.Footer        `json:"footer,omitempty"`
	Torn     bool                      `json:"torn,omitempty"`
	Records  []json.RawMessage         `json:"records"`
	Omitted  int                       `json:"omitted,omitempty"` // records beyond maxRecords, not shown
	Disabled []trajectory.ToolDisabled `json:"-"`
}

// maxRecords bounds the records one run page shows.
const maxRecords = 5000

// Runs reads the run records in one directory (<data_dir>/runs), caching
// summaries by file size and modification time. Safe for concurrent use.
type Runs struct {
	dir string

	mu    sync.Mutex
	cache map[string]runEntry
	live  map[string]time.Time // run id -> last turn seen, for runs in flight
}

type runEntry struct {
	key fileKey
	sum RunSummary
}

// NewRuns reads the run records in dir.
func NewRuns(dir string) *Runs {
	return &Runs{dir: dir, cache: map[string]runEntry{}, live: map[string]time.Time{}}
}

// setLive marks run id in flight (a turn arrived) or not (it finished).
func (r *Runs) setLive(id string, live bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if live {
		r.live[id] = now
	} else {
		delete(r.live, id)
	}
}

func (r *Runs) isLive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.live[id]
	return ok
}

// List returns every run, newest first. Unreadable records are skipped and
// reported together in the error.
func (r *Runs) List() ([]RunSummary, error) {
	files, err := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]RunSummary, 0, len(files))
	var errs []error
	r.mu.Lock()
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		name := filepath.Base(f)
		seen[name] = true
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		key := fileKey{fi.Size(), fi.ModTime()}
		e, ok := r.cache[name]
		if !ok || e.key != key {
			s, err := trajectory.Summary(f)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			e = runEntry{key: key, sum: summaryOf(s)}
			r.cache[name] = e
		}
		s := e.sum
		_, s.Live = r.live[s.RunID]
		s.Live = s.Live && s.Outcome == string(trajectory.OutcomeCrashed)
		out = append(out, s)
	}
	for name := range r.cache {
		if !seen[name] {
			delete(r.cache, name)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b RunSummary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
	return out, errors.Join(errs...)
}

func summaryOf(s trajectory.RunSummary) RunSummary {
	return RunSummary{RunID: s.RunID, Specialist: s.Specialist, Outcome: string(s.Outcome), Turns: s.Turns,
		Findings: s.Findings, DurationMS: s.Duration.Milliseconds(), StartedAt: s.StartedAt, EndedAt: s.EndedAt}
}

// ValidRunID reports whether id can name a run record: 1-128 of
// [A-Za-z0-9._-], not starting with '.' or '-' (the writer's rule).
func ValidRunID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' || id[0] == '-' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Get reads run id. The error wraps ErrBadRequest for an id that cannot
// name a run and ErrNotFound for one without a record.
func (r *Runs) Get(id string) (*RunDetail, error) {
	if !ValidRunID(id) {
		return nil, fmt.Errorf("%w: run id %q: want 1-128 of [A-Za-z0-9._-], not starting with '.' or '-'", ErrBadRequest, clip.Text(id, 40))
	}
	path := filepath.Join(r.dir, id+".jsonl")
	run, err := trajectory.ReadAll(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no run %q", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	d := &RunDetail{Header: run.Header, Footer: run.Footer, Torn: run.Torn}
	d.Summary = RunSummary{RunID: run.Header.RunID, Specialist: run.Header.Specialist, StartedAt: run.Header.StartedAt, Outcome: string(trajectory.OutcomeCrashed)}
	end := run.Header.StartedAt
	for i, rec := range run.Records {
		if i < maxRecords {
			b, err := trajectory.MarshalRecord(rec)
			if err != nil {
				return nil, fmt.Errorf("run %s: record %d: %w", id, i, err)
			}
			d.Records = append(d.Records, b)
		} else {
			d.Omitted++
		}
		switch rec := rec.(type) {
		case trajectory.Turn:
			d.Summary.Turns++
			d.Summary.Findings += rec.Findings
			if e := rec.StartedAt.Add(time.Duration(rec.LatencyMS) * time.Millisecond); e.After(end) {
				end = e
			}
			if len(d.Timeline) < maxRecords {
				d.Timeline = append(d.Timeline, timelineTurn(rec))
			}
		case trajectory.ToolDisabled:
			if len(d.Timeline) < maxRecords {
				d.Timeline = append(d.Timeline, TimelineRow{Kind: "tool_disabled", Index: rec.Turn, Tool: rec.Tool, Reason: clip.Text(rec.Reason, 300)})
			}
		}
	}
	if f := run.Footer; f != nil {
		d.Summary.Outcome = string(f.Outcome)
		d.Summary.Turns, d.Summary.Findings = f.Totals.Turns, f.Totals.Findings
		d.Summary.DurationMS = f.Totals.DurationMS
		d.Summary.EndedAt = f.EndedAt
	} else {
		d.Summary.DurationMS = end.Sub(run.Header.StartedAt).Milliseconds()
		d.Summary.Live = r.isLive(id)
	}
	return d, nil
}

// resultKeys are the result fields worth a place on a timeline line (as
// `fleetd runs show` picks them).
var resultKeys = []string{"outcome", "status", "hint", "name", "entry_id", "reverted", "bytes", "exit_code", "signal", "error"}

func timelineTurn(t trajectory.Turn) TimelineRow {
	row := TimelineRow{Kind: "turn", Index: t.Index, Time: t.StartedAt, LatencyMS: t.LatencyMS, Verdict: t.Validation.Result, Findings: t.Findings}
	if t.ProposedAction != nil {
		row.Tool = t.ProposedAction.Tool
		row.Args = clip.Text(string(t.ProposedAction.Args), 240)
	} else {
		row.Verdict = "done"
	}
	var res map[string]any
	if raw, ok := t.Result.(json.RawMessage); ok && len(raw) > 0 {
		json.Unmarshal(raw, &res)
	}
	if row.Verdict == trajectory.ValidationOK && res != nil {
		if ok, _ := res["ok"].(bool); !ok {
			row.Verdict = "error"
		}
	}
	var parts []string
	for _, k := range resultKeys {
		if v, ok := res[k]; ok && v != nil && v != "" {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	row.Detail = clip.Text(strings.Join(parts, " "), 400)
	if t.Validation.Reason != "" {
		row.Reason = clip.Text(t.Validation.Reason, 300)
	}
	return row
}
