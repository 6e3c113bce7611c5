package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/triage"
)

// ErrBadMark marks a correction the operator asked for wrongly (a bad
// index or kind, an entry that does not exist, a member already split),
// as opposed to one the chain would not take.
var ErrBadMark = errors.New("bad correction")

// Correction turns an operator's request (`fleetd findings mark REF WHAT
// [--reason R] [--until T]` or the console's mark control) into the record
// to post; errors wrap ErrBadMark and name what was wrong.
func Correction(m console.MarkRequest, now time.Time) (triage.Correction, error) {
	corr, err := triage.ParseMark(strings.TrimSpace(m.Ref), strings.TrimSpace(m.What))
	if err != nil {
		return corr, fmt.Errorf("%w: %w", ErrBadMark, err)
	}
	corr.Note = strings.TrimSpace(m.Reason)
	if u := strings.TrimSpace(m.Until); u != "" {
		if corr.Until, err = ParseUntil(u, now); err != nil {
			return corr, fmt.Errorf("%w: mark: --until %q: %w", ErrBadMark, u, err)
		}
	}
	if err := corr.Validate(); err != nil {
		return corr, fmt.Errorf("%w: mark: %w", ErrBadMark, err)
	}
	if _, err := corr.Format(); err != nil {
		return corr, fmt.Errorf("%w: %w", ErrBadMark, err)
	}
	return corr, nil
}

// Mark posts operators' corrections (`fleetd findings mark` and the
// console's mark control): cmd/fleetd loads the identity's keys and dials
// the log, Post checks and posts.
type Mark struct {
	// Log is the feedback log; nil when the node cannot be reached, and
	// then a correction is queued in the outbox unchecked (triage ignores
	// a correction of no entry).
	Log *chain.FeedbackLog
	// Triage is the engine's config, its trusted senders the identity's
	// included: the check reads the log as triage does.
	Triage triage.Config
	// Poster builds the poster for the identity (sponsored when a sponsor
	// key is configured), after the check.
	Poster func() (*poster.Poster, error)
	// Control's audit log records each correction posted.
	Control *fleet.Control
}

// Post appends corr, as asked for by what (its request's What): when the
// log answers it is first checked against the log as triage reads it
// (triage.BuildEngine, Engine.CheckCorrection: the whole log triaged, as
// `fleetd check` does, so a daemon holding the triage store is no
// obstacle), and an entry that is not a finding, a member already split
// or one with nothing to split out is refused and nothing is posted. The
// correction is posted keyed as one action (poster.Once) and recorded in
// the audit log as user. outbox is the outbox it went through. Errors
// wrap ErrBadMark when the request itself is wrong; others are the log's,
// the poster's or the audit log's.
func (m Mark) Post(ctx context.Context, corr triage.Correction, what, user string) (res poster.Result, outbox string, err error) {
	text, err := corr.Format()
	if err != nil {
		return poster.Result{}, "", fmt.Errorf("%w: %w", ErrBadMark, err)
	}
	if m.Log != nil {
		e, err := triage.BuildEngine(m.Triage, func(add func([]triage.Entry) error) error {
			_, err := m.Log.Scan(ctx, 0, add)
			return err
		})
		if err != nil {
			return poster.Result{}, "", fmt.Errorf("findings mark: read the log: %w", err)
		}
		if err := e.CheckCorrection(corr); err != nil {
			return poster.Result{}, "", fmt.Errorf("%w: findings mark: %w", ErrBadMark, err)
		}
	}
	p, err := m.Poster()
	if err != nil {
		return poster.Result{}, "", err
	}
	res, err = p.Post(ctx, poster.Record{Text: text, Source: "qa-operator", Keying: poster.Once})
	if err != nil {
		return res, p.OutboxDir(), err
	}
	if corr.Note != "" {
		what += fmt.Sprintf(" (%s)", Clip(Sanitize(corr.Note), 200))
	}
	if !corr.Until.IsZero() {
		what += " until " + corr.Until.Format(time.RFC3339)
	}
	ref := "entry " + corr.RefString()
	if corr.Cluster != "" {
		ref = "cluster " + corr.Cluster
	}
	audit := fmt.Sprintf("%s %s: correction %s", ref, what, res.Status)
	if res.Entry != nil {
		audit = fmt.Sprintf("%s %s: correction entry %d, tx %s", ref, what, res.Entry.Index, res.Entry.Tx)
	}
	return res, p.OutboxDir(), m.Control.Record("mark", audit, user)
}

// ParseUntil reads an expiry: an RFC 3339 time, a date (midnight UTC
// starting it), or a duration from now (720h). It must be in the future.
func ParseUntil(s string, now time.Time) (time.Time, error) {
	var t time.Time
	var err error
	switch {
	case len(s) == len("2006-01-02") && strings.Count(s, "-") == 2:
		t, err = time.Parse(time.DateOnly, s)
	case strings.ContainsAny(s, "T:"):
		t, err = time.Parse(time.RFC3339, s)
	default:
		var d time.Duration
		if d, err = time.ParseDuration(s); err == nil {
			t = now.Add(d)
		}
	}
	if err != nil {
		return time.Time{}, errors.New("want an RFC 3339 time, a date (2006-01-02) or a duration from now (720h)")
	}
	t = t.UTC().Truncate(time.Second)
	if !t.After(now) {
		return time.Time{}, fmt.Errorf("%s is not in the future", t.Format(time.RFC3339))
	}
	return t, nil
}
