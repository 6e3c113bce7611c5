package poster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
)

// setHead rewinds the dev chain to block n (geth's debug_setHead): what a
// reorg, or a node that restarts without its last blocks, does to the log.
func setHead(t *testing.T, url string, n uint64) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"debug_setHead","params":["0x%x"]}`, n)
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ Error *struct{ Message string } }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil {
		t.Fatalf("debug_setHead: %v %+v", err, r.Error)
	}
}

func landedFiles(t *testing.T, p *Poster) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(p.landedDir(), "*.json"))
	return m
}

// TestRewoundEntryIsPostedAgain: a posted entry stays landed until it
// is settled; when the chain is rewound under it, the next Settle puts it
// back into the outbox and Flush posts it again, once. The entry before
// the rewind point is untouched.
func TestRewoundEntryIsPostedAgain(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	// A client that gives up on a receipt after 3 s: the rewind drops the
	// second entry's transaction, and the first post after it, numbered
	// after that lost one, waits behind the gap until the client forgets
	// its nonce.
	cl, err := chain.Dial(ctx, h.chainURL, chain.Options{ReceiptTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p := h.poster(t, Config{Log: cl.FeedbackLog(h.log.Address())})
	first, err := p.Report(ctx, finding("kept through the rewind"))
	if err != nil || first.Status != Posted {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := p.Report(ctx, finding("taken off by the rewind"))
	if err != nil || second.Status != Posted {
		t.Fatalf("second: %+v %v", second, err)
	}
	if n := len(landedFiles(t, p)); n != 2 {
		t.Fatalf("%d landed entries, want 2", n)
	}
	if pend, _ := p.Pending(); len(pend) != 0 {
		t.Fatalf("%d pending after posting", len(pend))
	}
	// Nothing moved: a cheap pass keeps both, a full one too.
	if n, err := p.Settle(ctx); err != nil || n != 0 {
		t.Fatalf("settle before the rewind: %d requeued, %v", n, err)
	}

	setHead(t, h.chainURL, second.Entry.Block-1)
	if n, _ := h.log.Count(ctx); n != 1 {
		t.Fatalf("the rewind left %d entries, want 1", n)
	}
	n, err := p.Settle(ctx)
	if err != nil || n != 1 {
		t.Fatalf("settle after the rewind: %d requeued, %v", n, err)
	}
	pend, _ := p.Pending()
	if len(pend) != 1 || !strings.Contains(pend[0].Text, "taken off by the rewind") {
		t.Fatalf("pending after the rewind: %+v", pend)
	}
	if posted, left, err := p.FlushRetry(ctx, 3, 100*time.Millisecond); err != nil || posted != 1 || left != 0 {
		t.Fatalf("flush: posted %d, left %d, %v", posted, left, err)
	}
	count, _ := h.log.Count(ctx)
	texts := map[string]int{}
	for i := range count {
		e, err := h.log.At(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"kept through the rewind", "taken off by the rewind"} {
			if strings.Contains(e.Text, s) {
				texts[s]++
			}
		}
	}
	if texts["kept through the rewind"] != 1 || texts["taken off by the rewind"] != 1 {
		t.Fatalf("on the log after the flush: %v (%d entries)", texts, count)
	}
	// A second flush finds both where they are: nothing posted again.
	if posted, _, err := p.Flush(ctx); err != nil || posted != 0 {
		t.Fatalf("second flush posted %d, %v", posted, err)
	}
}

// TestLandedEntriesSettle: once its block is deep enough an entry still
// on the log is no longer kept; an unreadable landed file is moved aside, not
// deleted.
func TestLandedEntriesSettle(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p := h.poster(t, Config{})
	if r, err := p.Report(ctx, finding("settles")); err != nil || r.Status != Posted {
		t.Fatalf("%+v %v", r, err)
	}
	bad := filepath.Join(p.landedDir(), "garbage.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	// settleDepth more blocks: other findings, each a transaction.
	for i := range settleDepth {
		if _, err := h.log.Submit(ctx, h.sponsor, fmt.Sprintf("filler %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := p.Settle(ctx); err != nil || n != 0 {
		t.Fatalf("settle: %d requeued, %v", n, err)
	}
	if m := landedFiles(t, p); len(m) != 0 {
		t.Errorf("still landed after %d blocks: %v", settleDepth, m)
	}
	if _, err := os.Stat(bad + ".corrupt"); err != nil {
		t.Errorf("the unreadable landed file was not moved aside: %v", err)
	}
}
