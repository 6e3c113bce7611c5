package poster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// TestKilledAfterItsDecision: a process decides to post a finding (its
// fingerprint recorded as seen) and dies before posting it; here its
// Report waits behind a flush that holds the outbox, as a report did in
// fleetd mcp when it was killed (TestMCPUnderFaults: "acknowledged
// (deduped), on the log 0 times"). The next process's flush posts it, and
// its own report of the finding is a duplicate of an entry the log holds.
// Before, the finding was seen but queued nowhere until its decision was
// made: every report of it within the dedupe window was deduped against a
// post that never happened.
func TestKilledAfterItsDecision(t *testing.T) {
	h := newHarness(t)
	data := t.TempDir()
	proc := func() *Poster {
		return h.poster(t, Config{OutboxDir: filepath.Join(data, "outbox"), StateFile: filepath.Join(data, "reporter", "state.json")})
	}
	f := finding("a page is served without a content-security-policy")
	fp := fleet.Fingerprint(f)

	dying := proc()
	dying.flush.Lock() // a flush that holds the outbox while the process dies
	returned := make(chan Result, 1)
	go func() {
		res, _ := dying.Report(context.Background(), f)
		returned <- res
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(data, "reporter", "state.json"))
		if bytes.Contains(b, []byte(fp)) {
			break // decided: seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report did not decide within 30 s: state %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}

	next := proc() // the process that starts after the kill
	if posted, left, err := next.Flush(t.Context()); err != nil || posted != 1 || left != 0 {
		t.Errorf("the next process's flush: posted %d, left %d, %v; want the decided finding posted", posted, left, err)
	}
	res, err := next.Report(t.Context(), f)
	if err != nil || res.Status != Deduped {
		t.Errorf("the next report: %s, %v; want deduped", res.Status, err)
	}
	g := f
	g.Fingerprint = fp
	text, _ := fleet.Format(g)
	if n := countText(t, h.log, text); n != 1 {
		t.Errorf("the finding is on the log %d times, want 1", n)
	}

	// The dying process's report, let go, finds it posted: the log took it
	// once.
	dying.flush.Unlock()
	select {
	case res := <-returned:
		if res.Status != Deduped {
			t.Errorf("the first report, let go after the next process posted it: %s, want deduped", res.Status)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the first report did not return")
	}
	if n := countText(t, h.log, text); n != 1 {
		t.Errorf("after both: the finding is on the log %d times, want 1", n)
	}
}

// TestReportPostedByAFlushMeanwhile: a report queues its finding and waits
// for the outbox while a flush of the same process (the daemon's periodic
// one) posts everything queued, this finding too. The report says posted,
// with the entry the flush got: it is the one entry on the log. Before, it
// posted again, was refused as a duplicate of its own entry, and read
// "deduped".
func TestReportPostedByAFlushMeanwhile(t *testing.T) {
	h := newHarness(t)
	data := t.TempDir()
	p := h.poster(t, Config{OutboxDir: filepath.Join(data, "outbox"), StateFile: filepath.Join(data, "reporter", "state.json")})
	f := finding("a form posts its token in the query string")
	p.flush.Lock() // the periodic flush, running
	returned := make(chan Result, 1)
	go func() {
		res, err := p.Report(context.Background(), f)
		if err != nil {
			t.Errorf("report: %v", err)
		}
		returned <- res
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		items, err := p.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == 1 {
			break // queued, its report waits for the outbox
		}
		if time.Now().After(deadline) {
			t.Fatalf("the report did not queue within 30 s: %d items", len(items))
		}
		time.Sleep(20 * time.Millisecond)
	}
	posted, left, err := p.flushLocked(t.Context())
	if err != nil || posted != 1 || left != 0 {
		t.Fatalf("the flush: posted %d, left %d, %v; want the queued finding posted", posted, left, err)
	}
	p.flush.Unlock()
	var res Result
	select {
	case res = <-returned:
	case <-time.After(60 * time.Second):
		t.Fatal("the report did not return")
	}
	if res.Status != Posted || res.Entry == nil {
		t.Errorf("the report, posted by the flush while it waited: %s (entry %v), want posted with its entry", res.Status, res.Entry)
	}
	if n := countText(t, h.log, res.Text); n != 1 {
		t.Errorf("the finding is on the log %d times, want 1", n)
	}
	if len(p.awaited) != 0 {
		t.Errorf("the poster still awaits %d item(s) after the report returned", len(p.awaited))
	}
	// A report decided not to post (a duplicate now) awaits nothing after.
	if res, err := p.Report(t.Context(), f); err != nil || res.Status != Deduped {
		t.Errorf("the finding reported again: %s, %v; want deduped", res.Status, err)
	}
	if len(p.awaited) != 0 {
		t.Errorf("a deduped report left %d awaited item(s)", len(p.awaited))
	}
}
