package triage

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// SchemaVersion is the version of the JSON report. Fields are only ever
// added within a version.
const SchemaVersion = 1

// Report is the ranked health report. Its JSON form (snake_case) is what
// reports/latest.json holds and `fleetd report --format json` prints.
//
// Every string in a Report that comes from the log (titles, sources,
// repros) is untrusted data, verbatim: renderers escape it (RenderMarkdown,
// RenderTable) and nothing may pass it to a shell or a model prompt
// unquoted.
type Report struct {
	Schema      int       `json:"schema"`
	GeneratedAt time.Time `json:"generated_at"`
	// Head is the index after the last entry triaged: entries [0, Head).
	Head uint64 `json:"head"`
	// Block and BlockHash identify the chain state the entries were read at.
	Block     uint64  `json:"block,omitempty"`
	BlockHash string  `json:"block_hash,omitempty"`
	Totals    Totals  `json:"totals"`
	Weights   Weights `json:"weights"`
	// Clusters holds every cluster, ranked: open and regressed clusters a
	// trusted sender reported, then open ones only untrusted senders
	// reported, then resolved, then false positives; by score within each,
	// ties broken by the most recent report.
	Clusters []Row `json:"clusters"`
}

// Totals counts what the engine has read.
type Totals struct {
	Entries            int `json:"entries"`
	Findings           int `json:"findings"`  // ranked entries, free-form included
	FreeForm           int `json:"free_form"` // not qa/v1 (or malformed qa/v1)
	Malformed          int `json:"malformed"` // started like qa/v1 but broke the format
	Untrusted          int `json:"untrusted"` // from senders outside the trusted set
	Meta               int `json:"meta"`      // sev=meta or kind=meta: never ranked
	Corrections        int `json:"corrections"`
	CorrectionsApplied int `json:"corrections_applied"`
	CorrectionsIgnored int `json:"corrections_ignored"` // from untrusted senders
	CorrectionsInvalid int `json:"corrections_invalid"` // ref= not an earlier finding
	Clusters           int `json:"clusters"`
	Open               int `json:"open"`
	Regressed          int `json:"regressed"`
	Resolved           int `json:"resolved"`
	FalsePositive      int `json:"false_positive"`
}

// State is where a cluster stands.
type State string

// The states. A resolved cluster that a counted finding reports again after
// its resolution is regressed.
const (
	StateOpen          State = "open"
	StateRegressed     State = "regressed"
	StateResolved      State = "resolved"
	StateFalsePositive State = "false-positive"
)

// Active reports whether the state needs work: open or regressed.
func (s State) Active() bool { return s == StateOpen || s == StateRegressed }

// Row is one cluster of the report.
type Row struct {
	Rank     int            `json:"rank"`
	ID       string         `json:"id"` // the fingerprint of its first finding; stable
	Score    float64        `json:"score"`
	Severity fleet.Severity `json:"severity"`
	Surface  fleet.Surface  `json:"surface,omitempty"` // empty for free-form text
	Title    string         `json:"title"`
	State    State          `json:"state"`
	// Trusted is true when a trusted sender reported it; only then do the
	// counts below cover trusted findings alone.
	Trusted  bool `json:"trusted"`
	FreeForm bool `json:"free_form,omitempty"`
	// Count, Runs and Sources are over the counted findings: the trusted
	// ones, or, when there are none, the untrusted ones.
	Count   int      `json:"count"`
	Runs    int      `json:"runs"`
	Sources []string `json:"sources"`
	// Untrusted counts entries from untrusted senders in a trusted cluster,
	// shown but not counted.
	Untrusted int       `json:"untrusted,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Repro is the first counted repro (from a trusted entry when Trusted).
	Repro *fleet.Repro `json:"repro,omitempty"`
	// Entries holds the first counted entry index and the latest ones.
	Entries        []uint64 `json:"entries"`
	EntriesOmitted int      `json:"entries_omitted,omitempty"`
	// Correction is the entry whose resolution or false-positive record set
	// State, when one did.
	Correction *uint64  `json:"correction,omitempty"`
	NeedsRepro bool     `json:"needs_repro,omitempty"` // the fix stage asked for one and none came since
	Merged     []string `json:"merged,omitempty"`      // ids folded in by duplicate-of or a bridging report
	// PR is the fix stage's pull request for the cluster, when cmd/fleetd
	// attached one (AttachPRs).
	PR *PRLink `json:"pr,omitempty"`
}

// maxSources bounds the sources listed per row.
const maxSources = 20

// Report ranks every cluster. now is the report's GeneratedAt; ranking does
// not depend on it.
func (e *Engine) Report(now time.Time) Report {
	r := Report{
		Schema:      SchemaVersion,
		GeneratedAt: now.UTC(),
		Head:        e.next,
		Totals:      e.totals,
		Weights:     e.cfg.Weights,
	}
	rows := make([]Row, 0, len(e.clusters))
	first := make([]uint64, 0, len(e.clusters))
	for c := range e.clusters {
		cl := &e.clusters[c]
		if e.parent[c] != int32(c) {
			continue
		}
		row, f := e.row(cl)
		rows = append(rows, row)
		first = append(first, f)
		switch row.State {
		case StateOpen:
			r.Totals.Open++
		case StateRegressed:
			r.Totals.Regressed++
		case StateResolved:
			r.Totals.Resolved++
		case StateFalsePositive:
			r.Totals.FalsePositive++
		}
	}
	r.Totals.Clusters = len(rows)
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := &rows[a], &rows[b]
		return cmp.Or(
			cmp.Compare(bucket(x), bucket(y)),
			cmp.Compare(y.Score, x.Score),
			y.LastSeen.Compare(x.LastSeen),
			cmp.Compare(first[a], first[b]),
		)
	})
	r.Clusters = make([]Row, len(rows))
	for i, j := range order {
		r.Clusters[i] = rows[j]
		r.Clusters[i].Rank = i + 1
	}
	return r
}

// bucket orders rows before their score does: active findings from trusted
// senders, then active ones only untrusted senders reported (so a flood of
// fake criticals can never push a real finding down), then resolved, then
// false positives.
func bucket(r *Row) int {
	switch {
	case r.State.Active() && r.Trusted:
		return 0
	case r.State.Active():
		return 1
	case r.State == StateResolved:
		return 2
	}
	return 3
}

// row builds a cluster's row and returns its first counted entry index.
func (e *Engine) row(cl *cluster) (Row, uint64) {
	w := &e.cfg.Weights
	st, trusted := &cl.counted[0], true
	if st.n == 0 {
		st, trusted = &cl.counted[1], false
	}
	sev := severityOfRank(st.maxSev)
	runs := st.pairs.len()
	score := w.Severity[sev] * e.recurrence(len(st.sources), runs) * e.surfaceWeight(cl.surface)
	if !trusted {
		score *= w.Untrusted
	}
	state := StateOpen
	var correction *uint64
	switch cl.corr.kind {
	case fleet.KindFalsePositive:
		state = StateFalsePositive
	case fleet.KindResolution:
		state = StateResolved
		if st.last > cl.corr.index {
			state = StateRegressed
			score *= w.RegressionBoost
		}
	}
	if cl.corr.kind != "" {
		at := cl.corr.index
		correction = &at
	}
	entries := st.entries()
	if len(entries) == 0 || entries[0] != st.first {
		entries = append([]uint64{st.first}, entries...)
	}
	row := Row{
		ID:             cl.id,
		Score:          math.Round(score*1e4) / 1e4,
		Severity:       sev,
		Surface:        cl.surface,
		Title:          cl.rep.title,
		State:          state,
		Trusted:        trusted,
		FreeForm:       cl.freeForm,
		Count:          st.n,
		Runs:           runs,
		Sources:        e.sourceNames(st.sources),
		FirstSeen:      time.Unix(st.tFirst, 0).UTC(),
		LastSeen:       time.Unix(st.tLast, 0).UTC(),
		Repro:          cl.rep.repro,
		Entries:        entries,
		EntriesOmitted: st.n - len(entries),
		Correction:     correction,
		NeedsRepro:     cl.needsRepro && cl.rep.repro == nil,
	}
	if trusted {
		row.Untrusted = cl.counted[1].n
	}
	for _, m := range cl.merged {
		row.Merged = append(row.Merged, e.clusters[m].id)
	}
	return row, st.first
}

// recurrence is 1 + SourceDamping·ln(sources) + RunDamping·ln(min(runs, RunCap)).
func (e *Engine) recurrence(sources, runs int) float64 {
	w := &e.cfg.Weights
	r := 1.0
	if sources > 1 {
		r += w.SourceDamping * math.Log(float64(sources))
	}
	if runs = min(runs, w.RunCap); runs > 1 {
		r += w.RunDamping * math.Log(float64(runs))
	}
	return r
}

func (e *Engine) surfaceWeight(s fleet.Surface) float64 {
	if v, ok := e.cfg.Weights.Surface[s]; ok {
		return v
	}
	return e.cfg.Weights.SurfaceDefault
}

func (e *Engine) sourceNames(ids []int32) []string {
	names := make([]string, 0, min(len(ids), maxSources))
	for _, id := range ids[:min(len(ids), maxSources)] {
		names = append(names, e.srcs[id].name)
	}
	slices.Sort(names)
	return names
}

func severityOfRank(r int8) fleet.Severity {
	switch r {
	case 6:
		return fleet.SeverityCritical
	case 5:
		return fleet.SeverityHigh
	case 4:
		return fleet.SeverityMedium
	case 3:
		return fleet.SeverityLow
	case 2:
		return fleet.SeverityInfo
	case 1:
		return fleet.SeverityMeta
	}
	return fleet.SeverityUnknown
}
