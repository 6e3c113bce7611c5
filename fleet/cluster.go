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
	// Correction is the entry whose resolution or false-positive record set
	// State, when one did.
	Correction *uint64  `json:"correction,omitempty"`
	NeedsRepro bool     `json:"needs_repro,omitempty"` // the fix stage asked for one and none came since
	Merged     []string `json:"merged,omitempty"`      // ids folded in by duplicate-of or a bridging report
	// PR is the fix stage's pull request for the cluster, when cmd/fleetd
	// attached one (triage.AttachPRs).
	PR *PRLink `json:"pr,omitempty"`
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

// ClusterState is where a cluster stands.
type ClusterState string

// The cluster states. A resolved cluster that a counted finding reports
// again after its resolution is regressed.
const (
	ClusterOpen          ClusterState = "open"
	ClusterRegressed     ClusterState = "regressed"
	ClusterResolved      ClusterState = "resolved"
	ClusterFalsePositive ClusterState = "false-positive"
)

// Active reports whether the state needs work: open or regressed.
func (s ClusterState) Active() bool { return s == ClusterOpen || s == ClusterRegressed }
