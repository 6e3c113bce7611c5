package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/triage"
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

// TestMarkPost checks and posts corrections on the embedded dev chain: a
// false-positive of a finding is posted and audited; a correction of no
// such entry is refused with ErrBadMark and nothing is posted; with the
// node away (no log) it is queued in the outbox unchecked.
func TestMarkPost(t *testing.T) {
	ctx := context.Background()
	dc := startDevChain(t)
	id, _ := chain.GenerateKey()
	if _, err := dc.log.SubmitFor(ctx, id, dc.sponsor, "qa/v1 source=qa-ux sev=low surface=docs\nDead link"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctl := fleet.NewControl(dir)
	posters := 0
	mark := func(log *chain.FeedbackLog) Mark {
		return Mark{Log: log, Triage: triage.Config{Trusted: []fleet.Address{id.Address()}}, Control: ctl, Poster: func() (*poster.Poster, error) {
			posters++
			return poster.New(poster.Config{Log: log, Identity: id, Sponsor: dc.sponsor, OutboxDir: filepath.Join(dir, "outbox")})
		}}
	}
	corr := func(ref, what, reason string) triage.Correction {
		c, err := Correction(console.MarkRequest{Ref: ref, What: what, Reason: reason}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	res, _, err := mark(dc.log).Post(ctx, corr("0", "false-positive", "a\x1b[2Jtest page"), "false-positive", "alice")
	if err != nil || res.Entry == nil || res.Entry.Index != 1 {
		t.Fatalf("false-positive of entry 0: %+v, %v", res, err)
	}
	if n, _ := dc.log.Count(ctx); n != 2 {
		t.Errorf("%d entries after the correction, want 2", n)
	}
	audit, _ := ctl.Audit()
	if len(audit) != 1 || audit[0].User != "alice" || audit[0].Action != "mark" ||
		!strings.HasPrefix(audit[0].Reason, "entry 0 false-positive (") || strings.Contains(audit[0].Reason, "\x1b") ||
		!strings.Contains(audit[0].Reason, "correction entry 1, tx 0x") {
		t.Errorf("audit %+v", audit)
	}

	for _, ref := range []string{"7", "1"} { // past the end; a correction, not a finding
		_, _, err = mark(dc.log).Post(ctx, corr(ref, "resolved", ""), "resolved", "alice")
		if !errors.Is(err, ErrBadMark) || !errors.Is(err, triage.ErrNoSuchRef) {
			t.Errorf("resolved %s: %v, want ErrBadMark and ErrNoSuchRef", ref, err)
		}
	}
	if n, _ := dc.log.Count(ctx); n != 2 || posters != 1 {
		t.Errorf("refused corrections: %d entries, %d posters built; want 2 and 1", n, posters)
	}

	res, outbox, err := mark(nil).Post(ctx, corr("7", "resolved", ""), "resolved", "bob")
	if err != nil || res.Entry != nil || res.Status != poster.Queued || outbox != filepath.Join(dir, "outbox") {
		t.Errorf("node away: %+v in %s, %v; want queued unchecked", res, outbox, err)
	}
	if audit, _ = ctl.Audit(); len(audit) != 2 || !strings.Contains(audit[1].Reason, "entry 7 resolved: correction queued") {
		t.Errorf("audit of the queued correction: %+v", audit)
	}
}
