package trajectory

import (
	"encoding/json"
	"time"
)

// The record types, the value of the "type" key that opens every line.
const (
	TypeHeader       = "header"
	TypeTurn         = "turn"
	TypeToolDisabled = "tool_disabled"
	TypeFooter       = "footer"
)

// Record is one line of a run record: a Header, Turn, ToolDisabled or Footer
// (values, not pointers). The set is closed; Reader.Next returns one of the
// four and a type switch over them is exhaustive.
type Record interface {
	// RecordType returns the record's "type" discriminator, e.g. TypeTurn.
	RecordType() string
	isRecord()
}

// Header is the first record of every run: who ran, against what, with which
// limits and tools. Create writes it; it is never written again.
type Header struct {
	RunID          string `json:"run_id"`
	Specialist     string `json:"specialist"`
	Goal           string `json:"goal"`
	PersonaSHA256  string `json:"persona_sha256"`
	Build          string `json:"build"`
	Model          string `json:"model"`
	HarnessVersion string `json:"harness_version"`
	// Dial is the autonomy rung at run start ("observe", "exercise", "propose").
	Dial   string `json:"dial"`
	Budget Budget `json:"budget"`
	// Tools is the manifest of the tools the run was given, in the order the
	// model saw them.
	Tools []ToolInfo `json:"tools"`
	// Config is the run's effective configuration: any JSON-encodable value.
	// A Reader returns it as json.RawMessage (nil when absent), so re-encoding
	// a read header reproduces the original bytes.
	Config    any       `json:"config,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// Budget is the run's limits as recorded at start. The package does not
// interpret them; zero means whatever the runtime says it means (no limit).
type Budget struct {
	MaxTurns   int   `json:"max_turns"`
	MaxWrites  int   `json:"max_writes"`
	MaxTokens  int64 `json:"max_tokens"`
	DeadlineMS int64 `json:"deadline_ms"`
	// MaxWei is a decimal integer string: wei amounts overflow int64.
	MaxWei string `json:"max_wei,omitempty"`
}

// ToolInfo is one entry of the header's tools manifest.
type ToolInfo struct {
	Name string `json:"name"`
	// Rung is the lowest dial rung the tool needs.
	Rung string `json:"rung"`
	// SchemaSHA256 is the hex SHA-256 of the tool's argument schema, so a
	// reader can tell runs apart whose tool contract changed.
	SchemaSHA256 string `json:"schema_sha256,omitempty"`
}

// Turn is one step of the agent loop: what the model saw, what it proposed,
// whether the host let it run, what ran, and what came back.
type Turn struct {
	// Index counts turns from 0; a Writer refuses any other than the next.
	Index int `json:"index"`
	// Observation is what the model was given this turn: any JSON-encodable
	// value (nil omits it). A Reader returns it as json.RawMessage.
	Observation any `json:"observation,omitempty"`
	// ProposedAction is the call the model chose; nil when it chose none
	// (for example it declared the run done).
	ProposedAction *Action    `json:"proposed_action,omitempty"`
	Validation     Validation `json:"validation"`
	// ExecutedAction is the call that actually ran; nil when validation
	// refused it. It can differ from ProposedAction after argument repair.
	ExecutedAction *Action `json:"executed_action,omitempty"`
	// Result is the tool's result, normally a JSON object with ok and
	// latency_ms. Any JSON-encodable value; nil omits it. A Reader returns
	// it as json.RawMessage.
	Result        any           `json:"result,omitempty"`
	ModelMetadata ModelMetadata `json:"model_metadata"`
	// LatencyMS is the wall time of the whole turn, model call included.
	LatencyMS int64 `json:"latency_ms"`
	// Findings and Writes count the findings filed and writes made (the
	// meter's: on-chain writes and qa_submit requests) by this turn, so
	// Recover can rebuild footer totals from turns alone.
	Findings int `json:"findings,omitempty"`
	Writes   int `json:"writes,omitempty"`
	// PageWrites are the writes rendered pages tried during this turn (a
	// script's POST, a beacon, a form, a WebSocket), sent or held: the
	// sent ones are also counted in Writes.
	PageWrites []PageWrite `json:"page_writes,omitempty"`
	StartedAt  time.Time   `json:"started_at"`
}

// PageWrite is one write a rendered page tried.
type PageWrite struct {
	// Method is the HTTP method, or WEBSOCKET.
	Method string `json:"method"`
	URL    string `json:"url"`
	// Held is true when the write was not sent (answered inside the
	// browser or refused by its proxy); Reason says why (the dial, the
	// budget).
	Held   bool   `json:"held"`
	Reason string `json:"reason,omitempty"`
	// Via names the fence that decided it: page (the tab) or proxy.
	Via string `json:"via,omitempty"`
}

// Action is a tool call: the tool's name and its JSON arguments. Args must be
// valid JSON (or nil, which omits it).
type Action struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Validation results. The host refuses a call above the dial (refused) or
// with arguments that fail the tool's schema (invalid); refusals are counted
// in the footer totals.
const (
	ValidationOK      = "ok"
	ValidationRefused = "refused"
	ValidationInvalid = "invalid"
)

// Validation is the host's verdict on the proposed action.
type Validation struct {
	// Result is ValidationOK, ValidationRefused or ValidationInvalid.
	Result string `json:"result"`
	// Reason is what the model was told when Result is not ok.
	Reason string `json:"reason,omitempty"`
	// Retries is how many times the model was asked to repair its call.
	Retries int `json:"retries"`
}

// ModelMetadata is the cost of this turn's model call.
type ModelMetadata struct {
	TokensIn   int64 `json:"tokens_in"`
	TokensOut  int64 `json:"tokens_out"`
	DurationMS int64 `json:"duration_ms"`
}

// ToolDisabled records that a tool was taken away from the model for the
// rest of the run (after repeated failures).
type ToolDisabled struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
	// Turn is the index of the first turn the tool is absent from: the
	// number of turns written before this record.
	Turn int `json:"turn"`
}

// Outcome is how a run ended.
type Outcome string

// The outcomes a footer may carry. OutcomeCrashed is never written: Summary
// reports it for a run record that has no footer.
const (
	OutcomeDone             Outcome = "done"
	OutcomeBudgetExhausted  Outcome = "budget_exhausted"
	OutcomeDeadlineExceeded Outcome = "deadline_exceeded"
	OutcomeCancelled        Outcome = "cancelled"
	OutcomeHarnessError     Outcome = "harness_error"
	OutcomeSizeExceeded     Outcome = "size_exceeded"

	OutcomeCrashed Outcome = "crashed"
)

// Valid reports whether o may appear in a footer.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeDone, OutcomeBudgetExhausted, OutcomeDeadlineExceeded,
		OutcomeCancelled, OutcomeHarnessError, OutcomeSizeExceeded:
		return true
	}
	return false
}

// Footer is the last record of every finished run.
type Footer struct {
	Outcome      Outcome `json:"outcome"`
	FinalSummary string  `json:"final_summary"`
	Totals       Totals  `json:"totals"`
	// HarnessError is set exactly when Outcome is OutcomeHarnessError.
	HarnessError string `json:"harness_error,omitempty"`
	// Degraded are the capabilities the run fell back from (a fuzz engine
	// whose build failed, say), in the order first met.
	Degraded []Degradation `json:"degraded,omitempty"`
	EndedAt  time.Time     `json:"ended_at"`
}

// Degradation is a capability a run could not use as configured: what
// (Component, e.g. "libfuzzer engine"), what ran in its place (Fallback,
// "" for nothing) and why (Cause: the first error, e.g. the compiler's).
type Degradation struct {
	Component string `json:"component"`
	Fallback  string `json:"fallback,omitempty"`
	Cause     string `json:"cause"`
}

// String is the degradation for a person: "libfuzzer engine degraded: <cause>; <fallback> ran instead".
func (d Degradation) String() string {
	s := d.Component + " degraded: " + d.Cause
	if d.Fallback == "" {
		return s + "; nothing ran instead"
	}
	return s + "; " + d.Fallback + " ran instead"
}

// Totals sums a run.
type Totals struct {
	Turns     int   `json:"turns"`
	ToolCalls int   `json:"tool_calls"`
	Refusals  int   `json:"refusals"`
	Findings  int   `json:"findings"`
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
	Writes    int   `json:"writes"`
	// HeldWrites counts the page writes held (Turn.PageWrites).
	HeldWrites int   `json:"held_writes,omitempty"`
	DurationMS int64 `json:"duration_ms"`
}

// add folds one turn into t. Duration is not derived from turns.
func (t *Totals) add(tr *Turn) {
	t.Turns++
	if tr.ExecutedAction != nil {
		t.ToolCalls++
	}
	if tr.Validation.Result == ValidationRefused {
		t.Refusals++
	}
	t.Findings += tr.Findings
	t.Writes += tr.Writes
	for _, w := range tr.PageWrites {
		if w.Held {
			t.HeldWrites++
		}
	}
	t.TokensIn += tr.ModelMetadata.TokensIn
	t.TokensOut += tr.ModelMetadata.TokensOut
}

// RecordType implements Record.
func (Header) RecordType() string { return TypeHeader }

// RecordType implements Record.
func (Turn) RecordType() string { return TypeTurn }

// RecordType implements Record.
func (ToolDisabled) RecordType() string { return TypeToolDisabled }

// RecordType implements Record.
func (Footer) RecordType() string { return TypeFooter }

func (Header) isRecord()       {}
func (Turn) isRecord()         {}
func (ToolDisabled) isRecord() {}
func (Footer) isRecord()       {}

// UnmarshalJSON decodes a header, keeping Config as json.RawMessage so that
// re-encoding reproduces the bytes that were read (a JSON null stays null).
func (h *Header) UnmarshalJSON(b []byte) error {
	type plain Header
	var w struct {
		plain
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*h = Header(w.plain)
	if w.Config != nil {
		h.Config = w.Config
	}
	return nil
}

// UnmarshalJSON decodes a turn, keeping Observation and Result as
// json.RawMessage so that re-encoding reproduces the bytes that were read.
func (t *Turn) UnmarshalJSON(b []byte) error {
	type plain Turn
	var w struct {
		plain
		Observation json.RawMessage `json:"observation"`
		Result      json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = Turn(w.plain)
	if w.Observation != nil {
		t.Observation = w.Observation
	}
	if w.Result != nil {
		t.Result = w.Result
	}
	return nil
}

// The wire forms put the type discriminator first. They embed the record so
// its fields follow in declaration order.
type (
	headerWire struct {
		Type string `json:"type"`
		Header
	}
	turnWire struct {
		Type string `json:"type"`
		Turn
	}
	toolDisabledWire struct {
		Type string `json:"type"`
		ToolDisabled
	}
	footerWire struct {
		Type string `json:"type"`
		Footer
	}
)
