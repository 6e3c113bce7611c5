package fleet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cause is what the fix stage's bisection of a cluster found, as a
// kind=cause record on the log carries it: the first bad commit (Commit,
// Subject, Date), or, when the regression test failed at the oldest
// commit tried too, that commit (Since). Exactly one of Commit and Since
// is set. On the log:
//
//	qa/v1 source=qa-fixer sev=meta surface=compiler kind=cause ref=5c1e0a9d2b3f4a10 commit=3f2a… date=2026-11-20T10:04:00Z span=12
//	fleetd's fix stage bisected this cluster over 12 commits of main with its regression test.
//	subject: parser: accept empty enums
//
//	qa/v1 source=qa-fixer sev=meta surface=compiler kind=cause ref=5c1e0a9d2b3f4a10 since=9b0c… span=64
//	fleetd's fix stage bisected this cluster over 64 commits of main: present since the oldest commit tried.
//
// ref= names the cluster (its id) or one of its findings (an entry index).
type Cause struct {
	// Entry is the cause record's own entry (set by triage, not on the
	// wire).
	Entry   uint64    `json:"entry"`
	Commit  string    `json:"commit,omitempty"`
	Subject string    `json:"subject,omitempty"`
	Date    time.Time `json:"date,omitzero"`
	// Since is the oldest commit tried when the bug was present there
	// already: no commit in the range introduced it.
	Since string `json:"since,omitempty"`
	// Span is how many commits before the base the bisection reached (0:
	// not said).
	Span int `json:"span,omitempty"`
}

// Header keys and the summary line of a cause record.
const (
	causeKeyCommit = "commit"
	causeKeyDate   = "date"
	causeKeySince  = "since"
	causeKeySpan   = "span"
	causeSubject   = "subject: "
)

// MaxCauseSubject bounds a cause's commit subject in runes.
const MaxCauseSubject = 200

// ErrBadCause is wrapped by ParseCause and Cause.Record for a cause
// record that is not one.
var ErrBadCause = errors.New("bad cause record")

// Record returns c as a kind=cause finding about cluster (or entry) ref,
// from source on surface, with prose for people reading the log before
// the subject line. The error wraps ErrBadCause and names the field.
func (c Cause) Record(source string, surface Surface, ref, prose string) (Finding, error) {
	if err := c.validate(); err != nil {
		return Finding{}, err
	}
	if ref == "" {
		return Finding{}, fmt.Errorf("%w: no ref", ErrBadCause)
	}
	f := Finding{Source: source, Severity: SeverityMeta, Surface: surface, Kind: KindCause, Ref: ref}
	summary := strings.TrimSpace(prose)
	if c.Commit != "" {
		f.Extra = append(f.Extra, Field{Key: causeKeyCommit, Value: c.Commit})
		if !c.Date.IsZero() {
			f.Extra = append(f.Extra, Field{Key: causeKeyDate, Value: c.Date.UTC().Format(time.RFC3339Nano)})
		}
		if s := PlainText(c.Subject, MaxCauseSubject); s != "" {
			summary += "\n" + causeSubject + s
		}
	} else {
		f.Extra = append(f.Extra, Field{Key: causeKeySince, Value: c.Since})
	}
	if c.Span > 0 {
		f.Extra = append(f.Extra, Field{Key: causeKeySpan, Value: strconv.Itoa(c.Span)})
	}
	f.Summary = strings.TrimSpace(summary)
	return f, nil
}

// ParseCause reads a cause record from a parsed qa/v1 entry: the parser of
// kind=cause records on the log, which anyone may write. commit= and
// since= are commit hashes (7 to 64 lowercase hex digits), exactly one of
// them; date= an RFC 3339 time; span= a decimal count; the subject is the
// summary's last line starting with "subject: ", made plain and cut to
// MaxCauseSubject runes (PlainText). ref= must be present; what it names
// is the reader's business. The error wraps ErrBadCause and names what was
// wrong. Entry is left 0.
func ParseCause(f *Finding) (Cause, error) {
	bad := func(format string, args ...any) (Cause, error) {
		return Cause{}, fmt.Errorf("%w: %s", ErrBadCause, fmt.Sprintf(format, args...))
	}
	if f.FreeForm || f.Kind != KindCause {
		return bad("kind %q is not cause", f.Kind)
	}
	if f.Ref == "" {
		return bad("cause without ref=")
	}
	var c Cause
	var date, span string
	for _, x := range f.Extra {
		switch x.Key {
		case causeKeyCommit:
			c.Commit = x.Value
		case causeKeySince:
			c.Since = x.Value
		case causeKeyDate:
			date = x.Value
		case causeKeySpan:
			span = x.Value
		}
	}
	switch {
	case c.Commit == "" && c.Since == "":
		return bad("neither commit= nor since=")
	case c.Commit != "" && c.Since != "":
		return bad("both commit= and since=")
	case c.Commit != "" && !isCommitHash(c.Commit):
		return bad("commit=%.70q is not a commit hash (7 to 64 lowercase hex digits)", c.Commit)
	case c.Since != "" && !isCommitHash(c.Since):
		return bad("since=%.70q is not a commit hash (7 to 64 lowercase hex digits)", c.Since)
	case date != "" && c.Commit == "":
		return bad("date= without commit=")
	}
	if date != "" {
		t, err := time.Parse(time.RFC3339, date)
		if err != nil {
			return bad("date=%.40q is not an RFC 3339 time", date)
		}
		c.Date = t.UTC()
	}
	if span != "" {
		n, err := strconv.Atoi(span)
		if err != nil || n < 0 || strings.TrimLeft(span, "0123456789") != "" {
			return bad("span=%.40q is not a count of commits", span)
		}
		c.Span = n
	}
	if c.Commit != "" {
		s := f.Summary
		for s != "" {
			var line string
			line, s, _ = strings.Cut(s, "\n")
			if t := strings.TrimSpace(line); strings.HasPrefix(t, causeSubject) {
				c.Subject = PlainText(strings.TrimPrefix(t, causeSubject), MaxCauseSubject)
			}
		}
	}
	return c, nil
}

func (c Cause) validate() error {
	switch {
	case c.Commit == "" && c.Since == "":
		return fmt.Errorf("%w: neither a commit nor since", ErrBadCause)
	case c.Commit != "" && c.Since != "":
		return fmt.Errorf("%w: both a commit and since", ErrBadCause)
	case c.Commit != "" && !isCommitHash(c.Commit):
		return fmt.Errorf("%w: commit %.70q is not a commit hash", ErrBadCause, c.Commit)
	case c.Since != "" && !isCommitHash(c.Since):
		return fmt.Errorf("%w: since %.70q is not a commit hash", ErrBadCause, c.Since)
	case c.Span < 0:
		return fmt.Errorf("%w: span %d", ErrBadCause, c.Span)
	}
	return nil
}

// Line is the cause as one line for a person: "introduced by <short>
// "<subject>" (<day>)", or "present since the oldest commit tried
// (<short>, N commits back)". Subject is untrusted text: callers escape
// the line for their medium.
func (c *Cause) Line() string {
	switch {
	case c == nil:
		return ""
	case c.Commit != "":
		s := "introduced by " + shortHash(c.Commit)
		if c.Subject != "" {
			s += fmt.Sprintf(" %q", c.Subject)
		}
		if !c.Date.IsZero() {
			s += " (" + c.Date.UTC().Format("2006-01-02") + ")"
		}
		return s
	}
	s := "present since the oldest commit tried (" + shortHash(c.Since)
	if c.Span > 0 {
		s += fmt.Sprintf(", %d commits back", c.Span)
	}
	return s + ")"
}

func shortHash(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// isCommitHash reports whether s is an abbreviated or full git object
// name: 7 to 64 lowercase hex digits (SHA-1 or SHA-256).
func isCommitHash(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
