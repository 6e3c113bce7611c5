package fleet

import "encoding/json"

// Finding is one entry of the feedback log: a qa/v1 envelope, or a free-form
// text that a human or another agent wrote. Format and Parse convert between
// a Finding and the text stored on chain.
type Finding struct {
	Source      string   `json:"source,omitempty"`      // who reported it, e.g. "qa-fuzz" (a token)
	Severity    Severity `json:"severity"`              // SeverityUnknown for free-form entries
	Surface     Surface  `json:"surface,omitempty"`     // what part of the platform it is about
	Kind        Kind     `json:"kind,omitempty"`        // "" means KindFinding
	Fingerprint string   `json:"fingerprint,omitempty"` // the writer's fp=, a claim: see func Fingerprint
	Run         string   `json:"run,omitempty"`         // run=, the run that found it
	Ref         string   `json:"ref,omitempty"`         // ref=, e.g. the entry a resolution refers to
	Extra       []Field  `json:"extra,omitempty"`       // unknown header keys, in order of appearance, verbatim
	Summary     string   `json:"summary"`               // the human-readable text, trimmed; may be several lines
	Repro       *Repro   `json:"repro,omitempty"`       // nil when there is no repro line
	FreeForm    bool     `json:"free_form,omitempty"`   // the text is not a qa/v1 envelope
}

// Repro is a machine-runnable reproduction: a tool call the fix stage can
// replay in a fresh jail.
type Repro struct {
	Tool string          `json:"tool"` // e.g. "qa_compile"
	Args json.RawMessage `json:"args"` // the JSON object of arguments, as written
}

// Field is a header key=value pair that this version of fleet does not
// know, kept so that records written by newer daemons survive a round trip.
type Field struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}
