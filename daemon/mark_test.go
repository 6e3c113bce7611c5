package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/console"
)

// TestCorrection: a well-formed request becomes the correction to post,
// with its note and expiry; a wrong one is refused with ErrBadMark and an
// error naming what was wrong.
func TestCorrection(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	corr, err := Correction(console.MarkRequest{Ref: " 7 ", What: "accepted-risk", Reason: " known ", Until: "2027-01-02"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if corr.Note != "known" || !corr.Until.Equal(time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("correction %+v", corr)
	}
	if corr, err = Correction(console.MarkRequest{Ref: "3", What: "false-positive"}, now); err != nil || !corr.Until.IsZero() {
		t.Errorf("false-positive: %+v, %v", corr, err)
	}
	for _, tt := range []struct {
		req  console.MarkRequest
		want string
	}{
		{console.MarkRequest{Ref: "x", What: "resolved"}, ""},
		{console.MarkRequest{Ref: "1", What: "no-such-kind"}, ""},
		{console.MarkRequest{Ref: "1", What: "accepted-risk", Reason: "r", Until: "yesterday"}, "want an RFC 3339 time"},
		{console.MarkRequest{Ref: "1", What: "accepted-risk", Reason: "r", Until: "2020-01-01"}, "is not in the future"},
		{console.MarkRequest{Ref: "1", What: "accepted-risk", Reason: "r", Until: "-1h"}, "is not in the future"},
	} {
		_, err := Correction(tt.req, now)
		if !errors.Is(err, ErrBadMark) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want ErrBadMark naming %q", tt.req, err, tt.want)
		}
	}
}

// TestParseUntil reads each form relative to now.
func TestParseUntil(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"720h":                      now.Add(720 * time.Hour),
		"2026-12-07":                time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC),
		"2026-12-06T13:00:00Z":      now.Add(time.Hour),
		"2026-12-06T14:00:00+01:00": now.Add(time.Hour),
	} {
		got, err := ParseUntil(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
}

// FuzzParseUntil: any operator input either gives a whole-second UTC time
// after now or an error; it never panics.
func FuzzParseUntil(f *testing.F) {
	for _, s := range []string{"720h", "2026-12-07", "2026-12-06T13:00:00Z", "", "-1h", "9999999999h", "2026-13-45", "T:"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseUntil(s, now)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		if !got.After(now) || got.Location() != time.UTC || got.Nanosecond() != 0 {
			t.Fatalf("%q: %v (not a whole-second UTC time after now)", s, got)
		}
	})
}
