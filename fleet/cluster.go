package fleet

import "time"

// Cluster is one ranked cluster of a Report: the findings triage judged to
// be one bug, with their counts, state and (when the fix stage made one)
// pull request.
type Cluster struct {
	Rank     int          `json:"rank"`
	ID       string       `json:"id"` // the fingerprint of its first finding; stable
	Score    float64      `json:"score"`
	Severity Severity     `json:"severity"`
	Surface  Surface      `json:"surface,omitempty"` // empty for free-form text
	Title    string       `json:"title"`
	State    ClusterState `json:"state"`
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
	Repro *Repro `json:"repro,omitempty"`
	// Entries holds the first counted entry index and the latest ones.
	Entries        []uint64 `json:"entries"`
	EntriesOmitted int      `json:"entries_omitted,omitempty"`
	// Correction is the entry whose resolution, false-positive or
	// accepted-risk record set State, when one did.
	Correction *uint64 `json:"correction,omitempty"`
	// StateReason says why State is what it is when a correction is
	// involved: a false positive regressed by a new crash state or repro,
	// an accepted risk and its expiry, a risk whose expiry has passed.
	StateReason string `json:"state_reason,omitempty"`
	// Corrections is the cluster's correction history, oldest first (the
	// latest ones when there are many): every correction record triage
	// applied to it, or to a place of a folded row.
	Corrections []CorrectionNote `json:"corrections,omitempty"`
	NeedsRepro  bool             `json:"needs_repro,omitempty"` // the fix stage asked for one and none came since
	Merged      []string         `json:"merged,omitempty"`      // ids folded in by duplicate-of or a bridging report
	// PR is the fix stage's pull request for the cluster, when cmd/fleetd
	// attached one (triage.AttachPRs).
	PR *PRLink `json:"pr,omitempty"`
	// Cause is the commit that introduced the cluster's bug, or since when
	// it is present, as the latest valid kind=cause record from a trusted
	// sender says (the fix stage's bisection); nil when none does.
	Cause *Cause `json:"cause,omitempty"`
	// Places lists where one behaviour was seen when triage folded the
	// clusters of several places (names, pages) into this row: each
	// place, the cluster that holds its findings and their count. Empty
	// for a row of one place.
	Places []Place `json:"places,omitempty"`
}

// Place is one name or page where a folded behaviour was seen.
type Place struct {
	Place    string    `json:"place"`   // the repro's target name or URL
	Cluster  string    `json:"cluster"` // the cluster holding this place's findings
	Count    int       `json:"count"`
	LastSeen time.Time `json:"last_seen"`
}

// CorrectionNote is one correction record triage applied to a cluster.
// Reason is the record's summary (untrusted text, like a title).
type CorrectionNote struct {
	Entry  uint64     `json:"entry"` // the correction record's own entry
	Kind   Kind       `json:"kind"`
	Time   time.Time  `json:"time"`
	Ref    string     `json:"ref"`              // the entry index or cluster id it names
	Of     string     `json:"of,omitempty"`     // duplicate-of: the cluster it joined; unmerge: the cluster split from
	Until  *time.Time `json:"until,omitempty"`  // accepted-risk: when the acceptance ends
	Reason string     `json:"reason,omitempty"` // why, as the operator wrote it
}

// ClusterState is where a cluster stands.
type ClusterState string

// The cluster states. A resolved cluster that a counted finding reports
// again after its resolution is regressed, and so is a false positive that
// a new crash state or a materially different repro joins. An accepted
// risk whose expiry has passed is open again.
const (
	ClusterOpen          ClusterState = "open"
	ClusterRegressed     ClusterState = "regressed"
	ClusterResolved      ClusterState = "resolved"
	ClusterFalsePositive ClusterState = "false-positive"
	ClusterAcceptedRisk  ClusterState = "accepted-risk"
)

// Active reports whether the state needs work: open or regressed.
func (s ClusterState) Active() bool { return s == ClusterOpen || s == ClusterRegressed }
