package poster

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
)

// lockedBuf is a log sink safe for the poster's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestSponsorRunsDry: the sponsor is drained on the dev chain in the middle
// of a run. Findings reported then are acknowledged (queued in the outbox,
// not lost), posting pauses with one error line naming the sponsor and
// Funds says so; when the sponsor is funded again the next finding posts
// and the ones queued behind the pause go with it, each on the log exactly
// once, and the pause's end is logged once.
func TestSponsorRunsDry(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	var logs lockedBuf
	outbox := filepath.Join(t.TempDir(), "outbox")
	po := h.poster(t, Config{OutboxDir: outbox, PostTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var acked []string
	res, err := po.Report(ctx, finding("before the sponsor ran dry"))
	if err != nil || res.Status != Posted {
		t.Fatalf("report with a funded sponsor = %+v, %v", res, err)
	}
	acked = append(acked, res.Text)

	// Drain the sponsor into a bystander key.
	bystander, _ := chain.GenerateKey()
	if _, moved, err := h.client.SweepAll(ctx, h.sponsor, bystander.Address()); err != nil || moved.Sign() == 0 {
		t.Fatalf("drain the sponsor: %v (moved %v)", err, moved)
	}
	for i := range 3 {
		res, err := po.Report(ctx, finding("while the sponsor is dry #"+string(rune('a'+i))))
		if err != nil || res.Status != Queued {
			t.Fatalf("report with a dry sponsor = %+v, %v; want queued (acknowledged)", res, err)
		}
		acked = append(acked, res.Text)
	}
	f := po.Funds()
	if !f.Dry || f.Payer != h.sponsor.Address() || !strings.Contains(f.Error, "insufficient funds") {
		t.Errorf("Funds with a dry sponsor: %+v", f)
	}
	if n := logs.count("posting paused: the sponsor cannot pay for gas"); n != 1 {
		t.Errorf("the pause logged %d times, want once", n)
	}
	if posted, left, err := po.Flush(ctx); posted != 0 || left != 3 || err == nil || !strings.Contains(err.Error(), ErrSponsorDry.Error()) {
		t.Errorf("flush with a dry sponsor = %d, %d, %v; want 0, 3, the sponsor named", posted, left, err)
	}

	// Funded again: the next finding posts, the queue goes behind it.
	if _, err := h.client.Transfer(ctx, bystander, h.sponsor.Address(), ether); err != nil {
		t.Fatalf("refund the sponsor: %v", err)
	}
	res, err = po.Report(ctx, finding("after the sponsor was funded"))
	if err != nil || res.Status != Posted {
		t.Fatalf("report after refunding = %+v, %v", res, err)
	}
	acked = append(acked, res.Text)
	if f := po.Funds(); f.Dry {
		t.Errorf("Funds after refunding: %+v", f)
	}
	if items, _ := po.Pending(); len(items) != 0 {
		t.Errorf("%d items still queued after posting resumed", len(items))
	}
	if n := logs.count("posting resumed"); n != 1 {
		t.Errorf("the resumption logged %d times, want once", n)
	}
	for _, text := range acked {
		if n := countText(t, h.log, text); n != 1 {
			t.Errorf("%q is on the log %d times, want exactly once", text, n)
		}
	}
}
