package fleet

import (
	"encoding/json"
	"time"
)

// ReportSchema is the version of the report's JSON form. Fields are only
// ever added within a version.
const ReportSchema = 1

// Report is the ranked health report: triage makes it, the console, the MCP
// resources and the fix stage read it. Its JSON form (snake_case) is what
// <data_dir>/reports/latest.json holds, `fleetd report --format json`
// prints and /api/report serves; its field names are a contract with files
// already on disk.
//
// Every string in a Report that comes from the log (titles, sources,
// repros) is untrusted data, verbatim: renderers escape it and nothing may
// pass it to a shell or a model prompt unquoted.
type Report struct {
	Schema      int       `json:"schema"`
	GeneratedAt time.Time `json:"generated_at"`
	// Head is the index after the last entry triaged: entries [0, Head).
	Head uint64 `json:"head"`
	// Block and BlockHash identify the chain state the entries were read at.
	Block     uint64       `json:"block,omitempty"`
	BlockHash string       `json:"block_hash,omitempty"`
	Totals    ReportTotals `json:"totals"`
	// Weights are the ranking weights the report was made with, in the JSON
	// form of triage's configuration (triage.Weights). Readers show them
	// verbatim; only triage interprets them.
	Weights json.RawMessage `json:"weights,omitempty"`
	// Clusters holds every cluster, ranked: open and regressed clusters a
	// trusted sender reported, then open ones only untrusted senders
	// reported, then resolved and accepted risks, then false positives; by score within each,
	// ties broken by the most recent report.
	Clusters []Cluster `json:"clusters"`
}

// ReportTotals counts what triage has read.
type ReportTotals struct {
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
	// Causes counts kind=cause records (the fix stage's bisections):
	// those applied to a cluster, those from untrusted senders (ignored)
	// and those that are malformed or name no earlier finding (invalid).
	Causes        int `json:"causes,omitempty"`
	CausesIgnored int `json:"causes_ignored,omitempty"`
	CausesInvalid int `json:"causes_invalid,omitempty"`
	Clusters      int `json:"clusters"`
	Open          int `json:"open"`
	Regressed     int `json:"regressed"`
	Resolved      int `json:"resolved"`
	FalsePositive int `json:"false_positive"`
	AcceptedRisk  int `json:"accepted_risk,omitempty"`
}
