package fixer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Record is what fleetd knows about the PR of one fingerprint. prs.json
// holds one per fingerprint fleetd ever opened a PR for or asked a repro of.
type Record struct {
	Fingerprint string         `json:"fingerprint"`
	Title       string         `json:"title"` // inert (Inline)
	Severity    fleet.Severity `json:"severity"`
	Surface     fleet.Surface  `json:"surface"`
	Branch      string         `json:"branch,omitempty"`
	Number      int            `json:"number,omitempty"`
	URL         string         `json:"url,omitempty"`
	// State is the PR's: StateDraft, StateOpen, StateMerged, StateClosed,
	// or "" when fleetd never opened one (needs-repro, a job that stopped).
	State string `json:"state,omitempty"`
	// Verified is true when the PR carries a patch that passed
	// fail-to-pass and pass-to-pass; Verification says what ran.
	Verified     bool   `json:"verified"`
	Verification string `json:"verification,omitempty"`
	Attempts     int    `json:"attempts,omitempty"`
	// Regression is the test the PR adds, kept to re-check after merge.
	Regression *RegressionTest `json:"regression,omitempty"`
	OpenedAt   time.Time       `json:"opened_at,omitzero"` // when fleetd opened the PR
	UpdatedAt  time.Time       `json:"updated_at,omitzero"`
	ClosedAt   time.Time       `json:"closed_at,omitzero"` // closed or merged, as the forge says
	MergedAt   time.Time       `json:"merged_at,omitzero"`
	// Recheck is the after-merge result: "resolved" (the regression test
	// passes on the new base; ResolutionEntry is the kind=resolution record,
	// nil when it was queued or already on the log: see Poster) or
	// "still-reproduces" (a comment went to the PR).
	Recheck         string  `json:"recheck,omitempty"`
	RecheckCommit   string  `json:"recheck_commit,omitempty"`
	ResolutionEntry *uint64 `json:"resolution_entry,omitempty"`
	// NeedsRepro is the newest cluster entry when fleetd posted
	// kind=needs-repro for it (NeedsReproEntry is that record, or nil: see
	// Poster): it is posted again only after the cluster gets a newer entry.
	NeedsRepro      *uint64   `json:"needs_repro,omitempty"`
	NeedsReproEntry *uint64   `json:"needs_repro_entry,omitempty"`
	LastJob         string    `json:"last_job,omitempty"`
	LastRunAt       time.Time `json:"last_run_at,omitzero"`
	LastOutcome     string    `json:"last_outcome,omitempty"`
	LastError       string    `json:"last_error,omitempty"`

	// Cause is the last job's search for the commit that introduced the
	// finding (BisectStage); nil when none ran.
	Cause *Bisection `json:"cause,omitempty"`
	// CausePosted is the bisection result last posted as kind=cause (the
	// first bad commit, or "since <oldest>"), CauseEntry its record: a
	// result is posted once.
	CausePosted string  `json:"cause_posted,omitempty"`
	CauseEntry  *uint64 `json:"cause_entry,omitempty"`
}

// Active reports whether the record's PR is open (draft or ready).
func (r *Record) Active() bool { return r.State == StateOpen || r.State == StateDraft }

// storeFile is the records' file under the state dir.
const storeFile = "prs.json"

// storeSchema is prs.json's format version.
const storeSchema = 1

type storeJSON struct {
	Schema  int      `json:"schema"`
	Records []Record `json:"records"`
}

// ErrCorruptState is wrapped when prs.json is not what fleetd writes; the
// file is left as it is for an operator to look at.
var ErrCorruptState = errors.New("fixer state is corrupt")

// LoadRecords reads <dir>/prs.json; a missing file is no records. A file
// that does not parse, or holds a record without a fingerprint or twice the
// same one, is an error wrapping ErrCorruptState that names the file.
func LoadRecords(dir string) ([]Record, error) {
	path := filepath.Join(dir, storeFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fixer state: %w", err)
	}
	recs, err := decodeRecords(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCorruptState, err)
	}
	return recs, nil
}

// decodeRecords parses prs.json strictly.
func decodeRecords(b []byte) ([]Record, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s storeJSON
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the records")
	}
	if s.Schema != storeSchema {
		return nil, fmt.Errorf("schema %d, want %d", s.Schema, storeSchema)
	}
	seen := map[string]bool{}
	for i, r := range s.Records {
		if r.Fingerprint == "" {
			return nil, fmt.Errorf("records[%d]: no fingerprint", i)
		}
		if seen[r.Fingerprint] {
			return nil, fmt.Errorf("records[%d]: fingerprint %s twice", i, r.Fingerprint)
		}
		seen[r.Fingerprint] = true
		switch r.State {
		case "", StateDraft, StateOpen, StateMerged, StateClosed:
		default:
			return nil, fmt.Errorf("records[%d]: unknown state %q", i, r.State)
		}
	}
	return s.Records, nil
}

// saveRecords writes the records atomically, sorted by fingerprint.
func saveRecords(dir string, recs []Record) error {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b Record) int {
		switch {
		case a.Fingerprint < b.Fingerprint:
			return -1
		case a.Fingerprint > b.Fingerprint:
			return 1
		}
		return 0
	})
	b, err := json.MarshalIndent(storeJSON{Schema: storeSchema, Records: recs}, "", "  ")
	if err != nil {
		return fmt.Errorf("fixer state: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("fixer state: %w", err)
	}
	return fleet.WriteFileAtomic(filepath.Join(dir, storeFile), append(b, '\n'), 0o600)
}

// updateRecord loads the records, applies fn to the one of fp (a zero
// Record with that fingerprint when there is none) and saves them. The
// caller holds the state lock.
func updateRecord(dir, fp string, fn func(*Record)) (Record, error) {
	recs, err := LoadRecords(dir)
	if err != nil {
		return Record{}, err
	}
	i := slices.IndexFunc(recs, func(r Record) bool { return r.Fingerprint == fp })
	if i < 0 {
		recs = append(recs, Record{Fingerprint: fp})
		i = len(recs) - 1
	}
	fn(&recs[i])
	recs[i].Fingerprint = fp
	if err := saveRecords(dir, recs); err != nil {
		return Record{}, err
	}
	return recs[i], nil
}

// findRecord returns the record of fp, if any.
func findRecord(recs []Record, fp string) (Record, bool) {
	for _, r := range recs {
		if r.Fingerprint == fp {
			return r, true
		}
	}
	return Record{}, false
}

// PRRow is one line of fleetd prs: a record with a PR, its verification
// and age as text.
type PRRow struct {
	Fingerprint  string    `json:"fingerprint"`
	Number       int       `json:"number"`
	State        string    `json:"state"`
	Verified     bool      `json:"verified"`
	Verification string    `json:"verification"`
	URL          string    `json:"url"`
	Branch       string    `json:"branch"`
	OpenedAt     time.Time `json:"opened_at"`
	Age          string    `json:"age"`
	Recheck      string    `json:"recheck,omitempty"`
	Title        string    `json:"title"`
}

// RowOf is r's line of fleetd prs at now.
func RowOf(r Record, now time.Time) PRRow {
	v := "draft: regression test only"
	if r.Verified {
		v = "verified"
	} else if r.Attempts > 0 {
		v = fmt.Sprintf("unverified (%d attempts)", r.Attempts)
	}
	state := r.State
	if r.Recheck != "" {
		state += ", " + r.Recheck
	}
	return PRRow{Fingerprint: r.Fingerprint, Number: r.Number, State: state, Verified: r.Verified, Verification: v, URL: r.URL,
		Branch: r.Branch, OpenedAt: r.OpenedAt, Age: now.Sub(r.OpenedAt).Round(time.Second).String(), Recheck: r.Recheck, Title: r.Title}
}
