package poster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/faultnet"
)

// TestFullDisk: with the outbox and the reporter state on a tmpfs that is
// full, a finding is refused with an error naming the full disk (not
// acknowledged, not posted, no crash); the outbox holds no torn item and
// the state file stays readable. Findings queued before the disk filled
// (the node was down) survive it. Once space is freed, the refused finding
// is reported again and posted, the queued ones are flushed, and each
// acknowledged finding is on the log exactly once.
func TestFullDisk(t *testing.T) {
	disk := faultnet.Tmpfs(t, 256<<10)
	h := newHarness(t)
	ctx := context.Background()
	p, err := faultnet.Start(strings.TrimPrefix(h.chainURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	outbox := filepath.Join(disk, "outbox")
	state := filepath.Join(disk, "reporter", "state.json")
	node, err := chain.Dial(ctx, "http://"+p.Addr(), chain.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	po := h.poster(t, Config{Log: node.FeedbackLog(h.log.Address()), OutboxDir: outbox, StateFile: state, PostTimeout: 30 * time.Second})

	// Two findings queued while the node is down, then the disk fills.
	p.SetDown(true)
	var acked []string
	for _, s := range []string{"queued before the disk filled #1", "queued before the disk filled #2"} {
		res, err := po.Report(ctx, finding(s))
		if err != nil || res.Status != Queued {
			t.Fatalf("report with the node down = %+v, %v", res, err)
		}
		acked = append(acked, res.Text)
	}
	p.SetDown(false)
	filler := faultnet.Fill(t, disk)

	refused := finding("reported while the disk is full")
	for range 3 {
		res, err := po.Report(ctx, refused)
		if err == nil {
			t.Fatalf("a finding was acknowledged on a full disk: %+v", res)
		}
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device") {
			t.Errorf("the error does not say the disk is full: %v", err)
		}
		if res.Status == Posted || res.Entry != nil {
			t.Errorf("posted without being acknowledged: %+v", res)
		}
	}
	// Flushing on a full disk posts what is queued (removing a posted item
	// needs no space) or leaves it queued, intact.
	if _, _, err := po.Flush(ctx); err != nil {
		t.Logf("flush on a full disk: %v", err)
	}
	checkOutboxIntact(t, outbox)
	if b, err := os.ReadFile(state); err != nil || !json.Valid(b) {
		t.Errorf("the reporter state after the disk filled: %v %q", err, b)
	}

	// Space comes back: the refused finding is reported again and posted.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	res, err := po.Report(ctx, refused)
	if err != nil || res.Status != Posted {
		t.Fatalf("the finding refused on the full disk, reported again after space came back = %+v, %v; want posted", res, err)
	}
	acked = append(acked, res.Text)
	if posted, left, err := po.Flush(ctx); err != nil || left != 0 {
		t.Fatalf("flush after space came back: %d posted, %d left, %v", posted, left, err)
	}
	for _, text := range acked {
		if n := countText(t, h.log, text); n != 1 {
			t.Errorf("%q is on the log %d times, want exactly once", text, n)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(outbox, "*")); len(files) != 0 {
		t.Errorf("outbox not empty: %v", files)
	}
}

// checkOutboxIntact fails on any outbox file that is not a whole item: a
// torn write, a temporary file left behind, an item moved aside as corrupt.
func checkOutboxIntact(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*"))
	for _, f := range append(files, tmps...) {
		b, err := os.ReadFile(f)
		var it Item
		if err != nil || !strings.HasSuffix(f, ".json") || json.Unmarshal(b, &it) != nil || it.Text == "" {
			t.Errorf("outbox file %s is not a whole item (%v): %q", filepath.Base(f), err, b)
		}
	}
}

// TestFullOutboxDiskDecidesNothing: with the reporter state on a disk with
// room and the outbox on a full one, a finding is refused before any
// decision is recorded: the state file is not rewritten (a decision taken
// back by a second write would be lost, and the finding read as a
// duplicate for the dedupe window, if that write failed too), no temporary
// file is left, and the finding posts once space is back.
func TestFullOutboxDiskDecidesNothing(t *testing.T) {
	disk := faultnet.Tmpfs(t, 64<<10)
	h := newHarness(t)
	ctx := context.Background()
	outbox := filepath.Join(disk, "outbox")
	state := filepath.Join(t.TempDir(), "state.json")
	po := h.poster(t, Config{OutboxDir: outbox, StateFile: state, PostTimeout: 5 * time.Second})
	if res, err := po.Report(ctx, finding("before the disk filled")); err != nil || res.Status != Posted {
		t.Fatalf("first report = %+v, %v", res, err)
	}
	before, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	filler := faultnet.Fill(t, disk)
	f := finding("while the outbox disk is full")
	if res, err := po.Report(ctx, f); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("report on a full outbox disk = %+v, %v; want ENOSPC", res, err)
	}
	// Same inode and modification time: a rewrite renames a new file in
	// (whose inode number may be the old one's, reused).
	if after, err := os.Stat(state); err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the reporter state was rewritten for a finding that could not be queued")
	}
	checkOutboxIntact(t, outbox)
	os.Remove(filler)
	res, err := po.Report(ctx, f)
	if err != nil || res.Status != Posted {
		t.Fatalf("the same finding after space came back = %+v, %v; want posted (not deduped)", res, err)
	}
	if n := countText(t, h.log, res.Text); n != 1 {
		t.Errorf("on the log %d times, want once", n)
	}
}
