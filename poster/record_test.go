package poster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// texts returns the texts the fleet identity has on the log, in log order.
func (h *harness) texts(t *testing.T) []string {
	t.Helper()
	var out []string
	if _, err := h.log.Scan(context.Background(), 0, func(p []chain.Entry) error {
		for _, e := range p {
			if e.Sender == h.fleetKey.Address() {
				out = append(out, e.Text)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The records of other packages, as they write them (triage's corrections
// and meta summary, the fix stage's): none carries fp=, and a stamped one
// would change what triage reads.
const (
	markText       = "qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=12"
	resolutionText = "qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=5c1e0a9d2b3f4a10\nFixed by PR #3 (merged): its regression test passes on main at 0123abcd."
)

// TestRecordPostedAsWritten: a record is posted byte for byte (no
// fingerprint stamped), and the findings' rate limit does not apply to it.
func TestRecordPostedAsWritten(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p := h.poster(t, Config{PerSource: 1})
	for i := range 3 {
		res, err := p.Post(ctx, Record{Text: markText, Source: "qa-operator", Keying: Once})
		if err != nil || res.Status != Posted || res.Entry == nil || res.FP != "" || res.Text != markText {
			t.Fatalf("post %d = %+v, %v", i, res, err)
		}
	}
	if got := h.texts(t); len(got) != 3 || got[0] != markText {
		t.Errorf("on the log: %q, want the mark three times as written", got)
	}
	if _, err := p.Post(ctx, Record{Text: strings.Repeat("x", chain.MaxText+1), Keying: Once}); !errors.Is(err, ErrRejected) {
		t.Errorf("a text the log refuses: %v, want ErrRejected", err)
	}
	if _, err := p.Post(ctx, Record{Text: "x", Keying: Keying(7)}); err == nil {
		t.Error("an unknown keying was accepted")
	}
	if items, _ := p.Pending(); len(items) != 0 {
		t.Errorf("outbox holds %d items", len(items))
	}
}

// TestRecordByTextLandsOnce: two processes (two outboxes) post one fix
// record; the log takes it once and the second hears it is a duplicate.
func TestRecordByTextLandsOnce(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a, b := h.poster(t, Config{}), h.poster(t, Config{})
	rec := Record{Text: resolutionText, Source: "qa-fixer", Keying: ByText}
	if res, err := a.Post(ctx, rec); err != nil || res.Status != Posted {
		t.Fatalf("first = %+v, %v", res, err)
	}
	if res, err := b.Post(ctx, rec); err != nil || res.Status != Deduped {
		t.Fatalf("second process = %+v, %v; want deduped", res, err)
	}
	other := rec
	other.Text += " "
	if res, err := b.Post(ctx, other); err != nil || res.Status != Posted {
		t.Fatalf("another text = %+v, %v", res, err)
	}
	if got := h.texts(t); len(got) != 2 {
		t.Errorf("on the log %d times, want 2: %q", len(got), got)
	}
}

// TestRecordsQueueInOrder: with the chain down, records queue; the next post
// once it is back goes after them, so a correction never overtakes the one
// it revises. Two identical operator actions are two entries.
func TestRecordsQueueInOrder(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	node := newFlakyNode(t, h.chainURL)
	viaProxy, err := chain.Dial(ctx, node.srv.URL, chain.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer viaProxy.Close()
	outbox := t.TempDir()
	p := h.poster(t, Config{Log: viaProxy.FeedbackLog(h.log.Address()), OutboxDir: outbox, PostTimeout: 30 * time.Second})
	node.down.Store(true)
	resolved := strings.Replace(markText, "false-positive", "resolution", 1)
	queued := []string{markText, resolved, markText}
	for _, text := range queued {
		res, err := p.Post(ctx, Record{Text: text, Source: "qa-operator", Keying: Once})
		if err != nil || res.Status != Queued {
			t.Fatalf("with the chain down: %+v, %v", res, err)
		}
	}
	if items, _ := p.Pending(); len(items) != 3 {
		t.Fatalf("outbox holds %d items, want 3", len(items))
	}
	node.down.Store(false)
	res, err := p.Post(ctx, Record{Text: resolved, Source: "qa-operator", Keying: Once})
	if err != nil || res.Status != Posted {
		t.Fatalf("with the chain back: %+v, %v", res, err)
	}
	if got, want := h.texts(t), append(queued, resolved); !slices.Equal(got, want) {
		t.Errorf("log order %q, want %q", got, want)
	}
	if items, _ := p.Pending(); len(items) != 0 {
		t.Errorf("outbox holds %d items", len(items))
	}
}

// TestOnceRecordExactlyOnceAcrossACrash: a record posted just before a crash
// kept it in the outbox is not posted again by the next flush (its key
// says it landed), while an identical operator action queued separately is.
func TestOnceRecordExactlyOnceAcrossACrash(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	outbox := t.TempDir()
	p := h.poster(t, Config{OutboxDir: outbox})
	// Posted, then the process died before removing it from the outbox.
	item := Item{Text: markText, Source: "qa-operator", Queued: time.Now().UTC(), Key: strings.Repeat("ab", 32), Once: true}
	if err := p.enqueue(&item); err != nil {
		t.Fatal(err)
	}
	if _, err := p.post(ctx, item); err != nil {
		t.Fatal(err)
	}
	// Another action with the same text, queued while the chain was away.
	again := Item{Text: markText, Source: "qa-operator", Queued: time.Now().Add(time.Second).UTC(), Key: strings.Repeat("cd", 32), Once: true}
	if err := p.enqueue(&again); err != nil {
		t.Fatal(err)
	}
	posted, left, err := h.poster(t, Config{OutboxDir: outbox}).Flush(ctx) // the next process
	if err != nil || posted != 1 || left != 0 {
		t.Fatalf("Flush = %d posted, %d left, %v; want 1, 0", posted, left, err)
	}
	if got := h.texts(t); len(got) != 2 {
		t.Errorf("on the log %d times, want 2 (two actions, each once)", len(got))
	}
}

// TestOutboxFormatCompatible: an outbox file an earlier fleetd wrote (no
// key: a finding) is flushed under its fingerprint's key, and a finding
// queued now is written with exactly the fields it had.
func TestOutboxFormatCompatible(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	outbox := t.TempDir()
	f := finding("queued by an older fleetd")
	f.Fingerprint = fleet.Fingerprint(f)
	text, _ := fleet.Format(f)
	old, _ := json.Marshal(map[string]any{"text": text, "fp": f.Fingerprint, "source": f.Source, "queued": "2026-01-02T03:04:05.123456789Z", "log_count": 0})
	if err := os.WriteFile(filepath.Join(outbox, "20260102T030405.123456789-"+f.Fingerprint+".json"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	p := h.poster(t, Config{OutboxDir: outbox})
	if posted, left, err := p.Flush(ctx); err != nil || posted != 1 || left != 0 {
		t.Fatalf("Flush = %d, %d, %v", posted, left, err)
	}
	if _, err := h.log.SubmitKeyed(ctx, h.fleetKey, h.sponsor, text+" again", chain.FingerprintKey(f.Fingerprint), time.Hour); !errors.Is(err, chain.ErrDuplicate) {
		t.Errorf("the old item was not posted under its fingerprint's key: %v", err)
	}

	b, _ := json.Marshal(Item{Text: text, FP: f.Fingerprint, Source: f.Source, Queued: time.Now().UTC()})
	var keys []string
	var m map[string]any
	json.Unmarshal(b, &m)
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if got := strings.Join(keys, ","); got != "fp,queued,source,text" {
		t.Errorf("a finding's outbox item has fields %s", got)
	}
}
