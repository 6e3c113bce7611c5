package triage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// maxSources bounds the sources listed per row.
const maxSources = 20

// Report ranks every cluster, one behaviour seen at several places folded
// into one row (foldPlaces). now is the report's GeneratedAt; ranking
// depends on it only through the expiry of accepted risks (an accepted
// risk whose until= is not after now is open again).
func (e *Engine) Report(now time.Time) fleet.Report {
	r := fleet.Report{
		Schema:      fleet.ReportSchema,
		GeneratedAt: now.UTC(),
		Head:        e.next,
		Totals:      e.totals,
		Weights:     slices.Clone(e.weights),
	}
	rows := make([]fleet.Cluster, 0, len(e.clusters))
	first := make([]uint64, 0, len(e.clusters))
	of := make([]int32, 0, len(e.clusters)) // row -> cluster
	for c := range e.clusters {
		cl := &e.clusters[c]
		if e.parent[c] != int32(c) {
			continue
		}
		row, f := e.row(cl, now)
		rows = append(rows, row)
		first = append(first, f)
		of = append(of, int32(c))
	}
	rows, first = foldPlaces(rows, first, func(i int) (string, string, bool) { return e.behaviourOf(of[i], &rows[i]) })
	for i := range rows {
		switch rows[i].State {
		case fleet.ClusterOpen:
			r.Totals.Open++
		case fleet.ClusterRegressed:
			r.Totals.Regressed++
		case fleet.ClusterResolved:
			r.Totals.Resolved++
		case fleet.ClusterFalsePositive:
			r.Totals.FalsePositive++
		case fleet.ClusterAcceptedRisk:
			r.Totals.AcceptedRisk++
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
	r.Clusters = make([]fleet.Cluster, len(rows))
	for i, j := range order {
		r.Clusters[i] = rows[j]
		r.Clusters[i].Rank = i + 1
	}
	return r
}

// bucket orders rows before their score does: active findings from trusted
// senders, then active ones only untrusted senders reported (so a flood of
// fake criticals can never push a real finding down), then resolved and
// accepted risks, then false positives.
func bucket(r *fleet.Cluster) int {
	switch {
	case r.State.Active() && r.Trusted:
		return 0
	case r.State.Active():
		return 1
	case r.State == fleet.ClusterResolved || r.State == fleet.ClusterAcceptedRisk:
		return 2
	}
	return 3
}

// row builds a cluster's row and returns its first counted entry index.
func (e *Engine) row(cl *cluster, now time.Time) (fleet.Cluster, uint64) {
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
	state, reason := fleet.ClusterOpen, ""
	var correction *uint64
	switch cl.corr.kind {
	case fleet.KindFalsePositive:
		state = fleet.ClusterFalsePositive
		if cl.reopen.index > cl.corr.index {
			state, reason = fleet.ClusterRegressed, cl.reopen.reason
			score *= w.RegressionBoost
		}
	case fleet.KindAcceptedRisk:
		state, reason = fleet.ClusterAcceptedRisk, fmt.Sprintf("risk accepted at entry %d", cl.corr.index)
		if !cl.corr.until.IsZero() {
			reason += " until " + cl.corr.until.Format(time.RFC3339)
			if !now.Before(cl.corr.until) {
				state, reason = fleet.ClusterOpen, fmt.Sprintf("the risk accepted at entry %d expired at %s", cl.corr.index, cl.corr.until.Format(time.RFC3339))
			}
		}
		if cl.corr.reason != "" {
			reason += ": " + cl.corr.reason
		}
	case fleet.KindResolution:
		state = fleet.ClusterResolved
		if st.last > cl.corr.index {
			state = fleet.ClusterRegressed
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
	row := fleet.Cluster{
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
		StateReason:    reason,
		Corrections:    cl.notes[:len(cl.notes):len(cl.notes)], // shared: notes are never changed once appended
		NeedsRepro:     cl.needsRepro && cl.rep.repro == nil,
		Cause:          cl.cause,
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
