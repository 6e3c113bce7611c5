package triage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// MetaSource is the source= of triage's own summaries. Entries with sev=meta
// or kind=meta, this one's included, are never ranked.
const MetaSource = "qa-triage"

// metaTop is how many clusters the meta summary is about.
const metaTop = 3

// MetaState is what triage remembers about its last meta summary.
type MetaState struct {
	PostedAt time.Time `json:"posted_at"`
	Top      []TopItem `json:"top"`
}

// TopItem is one of the clusters a meta summary named.
type TopItem struct {
	ID    string             `json:"id"`
	State fleet.ClusterState `json:"state"`
}

// Top returns the first n active clusters a trusted sender reported: what
// the meta summary is about. Untrusted clusters never reach the log under
// the fleet's name.
func Top(r fleet.Report, n int) []TopItem {
	var out []TopItem
	for _, row := range r.Clusters {
		if len(out) == n {
			break
		}
		if row.Trusted && row.State.Active() {
			out = append(out, TopItem{ID: row.ID, State: row.State})
		}
	}
	return out
}

// TopChanged reports whether the top clusters of r differ from last as a
// set of (id, state): a reshuffle among the same three is not news, a new
// member or one that regressed is.
func TopChanged(r fleet.Report, last []TopItem) bool {
	now := Top(r, metaTop)
	if len(now) != len(last) {
		return true
	}
	key := func(t TopItem) string { return t.ID + "\x00" + string(t.State) }
	a, b := make([]string, len(now)), make([]string, len(last))
	for i := range now {
		a[i], b[i] = key(now[i]), key(last[i])
	}
	slices.Sort(a)
	slices.Sort(b)
	return !slices.Equal(a, b)
}

// MetaDue reports whether a meta summary should be posted now: the top
// clusters changed since the last one and at least every has passed since
// it was posted.
func MetaDue(r fleet.Report, st MetaState, now time.Time, every time.Duration) bool {
	if !TopChanged(r, st.Top) {
		return false
	}
	return st.PostedAt.IsZero() || now.Sub(st.PostedAt) >= every
}

// MetaText returns the meta summary of r as qa/v1 text of at most 2048
// bytes: a header `qa/v1 source=qa-triage sev=meta surface=fleet kind=meta`,
// one line of totals and one line per top cluster. Titles are reduced to
// one line of printable text, so the summary cannot smuggle a repro line or
// a second envelope into the log.
func MetaText(r fleet.Report) (string, error) {
	t := r.Totals
	var b strings.Builder
	fmt.Fprintf(&b, "health: %d open, %d regressed, %d resolved, %d false positive in %d clusters (entries 0-%d)",
		t.Open, t.Regressed, t.Resolved, t.FalsePositive, t.Clusters, int64(r.Head)-1)
	top := Top(r, metaTop)
	if len(top) == 0 {
		b.WriteString("\nno open findings from trusted senders")
	}
	for i, item := range top {
		for _, row := range r.Clusters {
			if row.ID != item.ID {
				continue
			}
			fmt.Fprintf(&b, "\n%d. [%s %s] %s (x%d, %d sources, entry %d, %s, id %s)", i+1, row.Severity, row.Surface,
				PlainText(row.Title, 160), row.Count, len(row.Sources), lastEntry(row), row.State, row.ID)
			break
		}
	}
	f := fleet.Finding{Source: MetaSource, Severity: fleet.SeverityMeta, Surface: fleet.SurfaceFleet, Kind: fleet.KindMeta, Summary: b.String()}
	text, err := fleet.Format(f)
	if err != nil {
		return "", fmt.Errorf("meta summary: %w", err)
	}
	return text, nil
}

func lastEntry(row fleet.Cluster) uint64 {
	if len(row.Entries) == 0 {
		return 0
	}
	return row.Entries[len(row.Entries)-1]
}
