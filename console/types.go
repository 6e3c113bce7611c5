package console

import (
	"context"
	"errors"
	"time"
)

// Entry is one feedback-log entry as the cluster page shows it.
type Entry struct {
	Index   uint64    `json:"index"`
	Sender  string    `json:"sender"`
	Trusted bool      `json:"trusted"`
	Time    time.Time `json:"time"` // the block's timestamp
	Text    string    `json:"text"` // untrusted
	// Tx and Block locate the transaction that appended the entry; empty
	// and zero when not known (yet).
	Tx    string `json:"tx,omitempty"`
	Block uint64 `json:"block,omitempty"`
}

// Fleet is the fleet's state as the Fleet page shows it.
type Fleet struct {
	Dial        string       `json:"dial"`
	DialError   string       `json:"dial_error,omitempty"`
	Paused      bool         `json:"paused"`
	Running     []string     `json:"running"`
	Specialists []Specialist `json:"specialists"`
	Triage      bool         `json:"triage"` // a triage pass can be started
	Budget      DailyBudget  `json:"budget"`
	Outbox      int          `json:"outbox"`
	Chain       ChainHealth  `json:"chain"`
	StartedAt   time.Time    `json:"started_at"`
	Fuzz        []FuzzStats  `json:"fuzz,omitempty"` // per target and engine, from the kept session statistics
	// Published is how the running specialists compare with the newest set
	// the fleet identity published on the log; nil: not known yet.
	Published *PublishedSet `json:"published,omitempty"`
	// Passes are the daemon's own scheduled passes (triage, the fix stage):
	// their triggers' records in a Specialist's fields, without planner,
	// tools or run records.
	Passes []Specialist `json:"passes,omitempty"`
}

// PublishedSet is the fleet's published set of specialists as the daemon
// last checked it.
type PublishedSet struct {
	Set     string    `json:"set"`             // the running set's hash
	Matches bool      `json:"matches"`         // the newest published set is the running one
	Entry   uint64    `json:"entry,omitempty"` // the published record's log entry
	Time    time.Time `json:"time,omitzero"`   // when it was published
	Checked time.Time `json:"checked"`         // when the daemon last compared
	Error   string    `json:"error,omitempty"` // why it could not compare or publish
	// Name is the fleet's name on the registry (chain.fleet_name), when
	// configured; NameMatches says its metadata holds this set and entry,
	// NameError why not.
	Name        string `json:"name,omitempty"`
	NameMatches bool   `json:"name_matches,omitempty"`
	NameError   string `json:"name_error,omitempty"`
}

// FuzzStats is one target's fuzzing with one engine, over the sessions
// kept in its statistics (across runs and processes).
type FuzzStats struct {
	Key         string `json:"key"` // the target's corpus key
	Engine      string `json:"engine"`
	Target      string `json:"target,omitempty"` // readable: the fuzz target, or "compiler"
	Sessions    int    `json:"sessions"`
	ExecsPerSec int    `json:"execs_per_sec"` // the newest session's
	// ExecsPerCPUSec is the newest session's inputs per CPU-second (0:
	// not measured): what compares engines on a busy machine.
	ExecsPerCPUSec int         `json:"execs_per_cpu_sec,omitempty"`
	Coverage       int         `json:"coverage,omitempty"`
	Features       int         `json:"features,omitempty"`
	CorpusSize     int         `json:"corpus_size"`
	Last           time.Time   `json:"last"`                       // the newest session's end
	NewCoverage    time.Time   `json:"last_new_coverage,omitzero"` // zero: no session found any
	Crashes        []FuzzCrash `json:"crashes,omitempty"`          // by state, most often found first
	Points         []FuzzPoint `json:"points,omitempty"`           // coverage over time, oldest first
}

// FuzzCrash is a crash state and how many sessions found it.
type FuzzCrash struct {
	State    string `json:"state"` // untrusted: the target's output
	Sessions int    `json:"sessions"`
}

// FuzzPoint is one session's coverage: edges, else features, else the
// corpus size (engines without coverage feedback).
type FuzzPoint struct {
	Time     time.Time `json:"time"`
	Coverage int       `json:"coverage"`
}

// Specialist is one specialist's schedule and record.
type Specialist struct {
	Name    string   `json:"name"`
	Planner string   `json:"planner,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	Trigger string   `json:"trigger"` // how it fires, in words
	Running bool     `json:"running"`
	// From the triggers.
	NextRun    time.Time `json:"next_run,omitzero"`
	Fired      int64     `json:"fired"`
	Started    int64     `json:"started"`
	Skipped    int64     `json:"skipped"`
	LastSkip   string    `json:"last_skip,omitempty"`
	LastFired  time.Time `json:"last_fired,omitzero"`
	LastReason string    `json:"last_reason,omitempty"`
	// Held counts event polls whose start waited for a run to end (the
	// specialist was running or the fleet at daemon.max_concurrent) instead
	// of being skipped; Retried, held starts that started when a run ended
	// (also in Started); PendingReason, the reason of the start waiting
	// now (e.g. "event:feedback x 7"), empty when none waits.
	Held          int64     `json:"held"`
	Retried       int64     `json:"retried"`
	PendingReason string    `json:"pending_reason,omitempty"`
	PendingSince  time.Time `json:"pending_since,omitzero"` // when the start waiting now was first refused
	// LongestWaitSeconds is the longest a held start waited before it
	// ran; Yielded, how often a continuous specialist let waiting starts
	// go first.
	LongestWaitSeconds float64 `json:"longest_wait_seconds,omitempty"`
	Yielded            int64   `json:"yielded,omitempty"`
	// Starved: a scheduled specialist that is not running has not run in
	// three of its periods; StarvedReason says for how long and why (its
	// start waits for a free slot, or the last refusal).
	Starved       bool   `json:"starved"`
	StarvedReason string `json:"starved_reason,omitempty"`
	// From the run records: its latest run.
	LastRunID   string    `json:"last_run_id,omitempty"`
	LastOutcome string    `json:"last_outcome,omitempty"`
	LastEnded   time.Time `json:"last_ended,omitzero"`
}

// DailyBudget is today's fleet-wide spend against the daily limits (zero:
// unlimited).
type DailyBudget struct {
	Date      string `json:"date"`
	Runs      int    `json:"runs"`
	Writes    uint64 `json:"writes"`
	MaxWrites uint64 `json:"max_writes"`
	Tokens    uint64 `json:"tokens"`
	MaxTokens uint64 `json:"max_tokens"`
	Wei       uint64 `json:"wei"`
	MaxWei    uint64 `json:"max_wei"`
}

// ChainHealth is the node as last asked.
type ChainHealth struct {
	RPC       string    `json:"rpc,omitempty"`
	OK        bool      `json:"ok"`
	Error     string    `json:"error,omitempty"`
	Head      uint64    `json:"head,omitempty"`
	HeadTime  time.Time `json:"head_time,omitzero"`
	LatencyMS int64     `json:"latency_ms"`
	CheckedAt time.Time `json:"checked_at,omitzero"`
}

// Source is what the console reads that only cmd/fleetd can provide.
type Source interface {
	// Entries returns the log entries at the given indexes, in the order
	// asked, skipping indexes past the end of the log. Tx and Block are set
	// when known. The error wraps ErrUnavailable when the log cannot be read.
	Entries(ctx context.Context, indexes []uint64) ([]Entry, error)
	// Fleet returns the fleet's state now; Dial and Paused are filled by the
	// console itself.
	Fleet(ctx context.Context) (Fleet, error)
}

// Controls are the state changes that go through cmd/fleetd's code paths.
// The dial and the kill switch go through fleet.Control directly. Every
// method records the change in the audit log as user.
type Controls interface {
	// RunNow starts specialist now through the runner. It wraps
	// ErrBadRequest for an unknown specialist and ErrNotStarted (with the
	// runner's reason) when the runner would not start it. A run now does
	// not queue (triggers' Run now): ahead names the specialists whose
	// starts were waiting for a slot when it took one, which the console
	// says.
	RunNow(ctx context.Context, specialist, user string) (ahead []string, err error)
	// TriageNow starts a triage pass through the runner; errors as RunNow.
	TriageNow(ctx context.Context, user string) error
	// Mark posts an operator's correction, as the fleet identity (see
	// MarkRequest). It wraps ErrBadRequest for a bad request (an index that
	// is no finding, a member already split, an accepted risk without a
	// reason) and ErrUnavailable when the correction can be neither posted
	// nor queued.
	Mark(ctx context.Context, req MarkRequest, user string) (MarkResult, error)
}

// MarkRequest is a correction an operator asks for from the console.
type MarkRequest struct {
	// Ref is an entry index, or, for unmerge, the id of a cluster listed
	// among a folded row's places.
	Ref string
	// What is false-positive, resolved, duplicate-of=J, unmerge or
	// accepted-risk.
	What   string
	Reason string // why; required for accepted-risk
	Until  string // accepted-risk: when it ends (RFC 3339, a date, a duration); "" never
}

// MarkResult is a posted correction, or one queued in the outbox (the chain
// could not be reached: it is posted when it is back, and has no entry yet).
type MarkResult struct {
	Index  uint64 `json:"index"` // the correction's own entry
	Tx     string `json:"tx"`
	Text   string `json:"text"`
	Queued bool   `json:"queued,omitempty"`
}

// Errors the Source and Controls wrap; the console maps them to statuses.
var (
	ErrBadRequest  = errors.New("bad request")        // 400 with the message
	ErrNotFound    = errors.New("not found")          // 404 with the message
	ErrNotStarted  = errors.New("not started")        // 409 with the message
	ErrUnavailable = errors.New("unavailable")        // 503 with the message
	ErrNoReport    = errors.New("no report yet")      // the Health page says so
	errForbidden   = errors.New("forbidden")          // 403
	errUnauth      = errors.New("token required")     // 401
	errMethod      = errors.New("method not allowed") // 405
)
