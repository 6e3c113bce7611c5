package poster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/faultnet"
)

// TestFlushRetryRidesOutAnOutage: findings queued while the node is down
// (the state `fleetd probe` used to exit in, leaving them for a reconcile
// that a CronJob's throwaway volume never sees) are posted by FlushRetry
// once the node comes back within its tries, exactly once; while the node
// stays down it gives up after its tries and says how many are left.
func TestFlushRetryRidesOutAnOutage(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p, err := faultnet.Start(strings.TrimPrefix(h.chainURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := chain.Dial(ctx, "http://"+p.Addr(), chain.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outbox := filepath.Join(t.TempDir(), "outbox")
	po, err := New(Config{Log: c.FeedbackLog(h.log.Address()), Identity: h.fleetKey, Sponsor: h.sponsor, OutboxDir: outbox, PostTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.SetDown(true)
	var texts []string
	for i := range 3 {
		res, err := po.Report(ctx, finding("queued during the outage #"+string(rune('a'+i))))
		if err != nil || res.Status != Queued {
			t.Fatalf("report with the node down = %+v, %v", res, err)
		}
		texts = append(texts, res.Text)
	}

	start := time.Now()
	posted, left, err := po.FlushRetry(ctx, 3, 50*time.Millisecond)
	if posted != 0 || left != 3 || err == nil {
		t.Fatalf("FlushRetry with the node down for good = %d, %d, %v; want 0, 3, an error", posted, left, err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("three tries took %s: no backoff between them", took)
	}

	go func() { time.Sleep(300 * time.Millisecond); p.SetDown(false) }()
	posted, left, err = po.FlushRetry(ctx, 6, 100*time.Millisecond)
	if err != nil || posted != 3 || left != 0 {
		t.Fatalf("FlushRetry across the outage's end = %d posted, %d left, %v; want 3, 0", posted, left, err)
	}
	for _, text := range texts {
		if n := countText(t, h.log, text); n != 1 {
			t.Errorf("%q is on chain %d times, want exactly once", text, n)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(outbox, "*.json")); len(files) != 0 {
		t.Errorf("outbox not empty: %v", files)
	}
	t.Logf("faults injected: %v", p.Counts())
}
