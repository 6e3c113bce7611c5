package daemon

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qafleet/fleetd/console"
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
	return corr, nil
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
