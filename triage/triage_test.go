package triage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// fakeChain is an in-memory log with blocks: each Append seals a block
// holding the new entries. Reorg rewrites history from a block on.
type fakeChain struct {
	blocks  [][32]byte // hash of block n at index n
	counts  []uint64   // entries as of block n
	entries []chain.Entry
	fork    byte  // changes block hashes after a reorg
	page    int   // entries per Scan page
	failAt  int   // fail Scan after this many pages (0: never)
	down    error // every call fails with this
	scans   int
}

func newFakeChain() *fakeChain {
	c := &fakeChain{page: 3}
	c.seal()
	return c
}

func (c *fakeChain) seal() {
	n := len(c.blocks)
	var h [32]byte
	h[0], h[1], h[2] = byte(n), byte(n>>8), c.fork
	h[31] = 0xbb
	c.blocks = append(c.blocks, h)
	c.counts = append(c.counts, uint64(len(c.entries)))
}

func (c *fakeChain) Append(sender [20]byte, texts ...string) {
	for _, t := range texts {
		i := uint64(len(c.entries))
		c.entries = append(c.entries, chain.Entry{Index: i, Sender: sender, Time: t0.Add(time.Duration(i) * time.Minute), Text: t})
	}
	c.seal()
}

// Reorg drops every block after keep (and the entries they added), then
// seals the given texts in new blocks with new hashes.
func (c *fakeChain) Reorg(keep int, sender [20]byte, texts ...string) {
	c.fork++
	c.entries = c.entries[:c.counts[keep]]
	c.blocks, c.counts = c.blocks[:keep+1], c.counts[:keep+1]
	c.Append(sender, texts...)
}

func (c *fakeChain) Scan(ctx context.Context, from uint64, fn func([]chain.Entry) error) (chain.ScanResult, error) {
	c.scans++
	if c.down != nil {
		return chain.ScanResult{}, c.down
	}
	head := len(c.blocks) - 1
	res := chain.ScanResult{Next: from, Block: uint64(head), BlockHash: c.blocks[head]}
	count := c.counts[head]
	for pages := 0; res.Next < count; pages++ {
		if c.failAt > 0 && pages == c.failAt {
			return res, errors.New("connection reset")
		}
		end := min(count, res.Next+uint64(c.page))
		page := append([]chain.Entry(nil), c.entries[res.Next:end]...)
		if err := fn(page); err != nil {
			return res, err
		}
		res.Next = end
	}
	return res, nil
}

func (c *fakeChain) BlockHash(ctx context.Context, n uint64) ([32]byte, error) {
	if c.down != nil {
		return [32]byte{}, c.down
	}
	if n >= uint64(len(c.blocks)) {
		return [32]byte{}, nil
	}
	return c.blocks[n], nil
}

var _ Chain = (*fakeChain)(nil)

type fakePoster struct {
	texts []string
	err   error
}

func (p *fakePoster) Post(ctx context.Context, text string) error {
	if p.err != nil {
		return p.err
	}
	p.texts = append(p.texts, text)
	return nil
}

func MustOpen(tb testing.TB, dir string, cfg Config) *Triage {
	tb.Helper()
	if cfg.Trusted == nil {
		cfg.Trusted = fleetTrusted()
	}
	t, err := Open(dir, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.Close() })
	return t
}

func fleetTrusted() []fleet.Address { return []fleet.Address{fleetAddr, operatorAddr} }

func finding(n int) string {
	return fmt.Sprintf("qa/v1 source=qa-fuzz sev=high surface=compiler run=r-%d\ncrash %d\nrepro: qa_compile {\"source\":\"bug%c\"}", n, n%3, 'a'+n%3)
}

// allEntries returns what the engine was fed, as a check on the store.
func storedTexts(t *testing.T, tr *Triage) []string {
	t.Helper()
	var out []string
	if err := tr.store.Load(func(es []Entry) error {
		for _, e := range es {
			out = append(out, e.Text)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSyncIncrementalAndReorg(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newFakeChain()
	c.Append(fleetAddr, finding(0), finding(1), finding(2), finding(3))
	tr := MustOpen(t, dir, Config{})

	res, err := tr.Sync(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Read != 4 || res.Next != 4 || res.Reorg {
		t.Fatalf("first sync %+v, want 4 read", res)
	}
	c.Append(fleetAddr, finding(4), finding(5)) // block 2
	c.Append(fleetAddr, finding(6))             // block 3
	if res, err = tr.Sync(ctx, c); err != nil || res.From != 4 || res.Read != 3 {
		t.Fatalf("second sync %+v, %v; want 3 read from 4", res, err)
	}

	// Blocks 2 and 3 are replaced: entries 4-6 are gone, 4-5 are new text.
	c.Reorg(1, fleetAddr, "qa/v1 source=qa-ux sev=low surface=docs\nreorged a", "qa/v1 source=qa-ux sev=low surface=docs\nreorged b")
	res, err = tr.Sync(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reorg || res.ForkAt != 4 || res.From != 4 || res.Next != 6 {
		t.Fatalf("sync after reorg %+v, want a reorg at 4 and entries up to 6", res)
	}
	want := append(append([]string(nil), c.entries[0].Text, c.entries[1].Text, c.entries[2].Text, c.entries[3].Text), "qa/v1 source=qa-ux sev=low surface=docs\nreorged a", "qa/v1 source=qa-ux sev=low surface=docs\nreorged b")
	if diff := cmp.Diff(want, storedTexts(t, tr)); diff != "" {
		t.Errorf("store after reorg (-want +got):\n%s", diff)
	}
	r := tr.Report(t0)
	if r.Head != 6 || r.Totals.Findings != 6 {
		t.Errorf("report after reorg: head %d findings %d, want 6 and 6", r.Head, r.Totals.Findings)
	}

	// A restart loads the cache and needs no re-read.
	tr.Close()
	c.scans = 0
	tr2 := MustOpen(t, dir, Config{})
	if res, err = tr2.Sync(ctx, c); err != nil || res.Read != 0 || res.From != 6 {
		t.Fatalf("sync after restart %+v, %v; want nothing new from 6", res, err)
	}
	if diff := cmp.Diff(r.Clusters, tr2.Report(t0).Clusters); diff != "" {
		t.Errorf("report after restart differs (-before +after):\n%s", diff)
	}

	// A reorg deeper than every checkpoint re-reads everything.
	c.Reorg(0, fleetAddr, finding(9))
	if res, err = tr2.Sync(ctx, c); err != nil || !res.Reorg || res.ForkAt != 0 || res.Next != 1 {
		t.Fatalf("deep reorg %+v, %v; want everything re-read", res, err)
	}
}

func TestSyncPartialFailure(t *testing.T) {
	ctx := context.Background()
	c := newFakeChain()
	for i := range 10 {
		c.Append(fleetAddr, finding(i))
	}
	c.failAt = 2 // two pages of three, then an error
	tr := MustOpen(t, t.TempDir(), Config{})
	res, err := tr.Sync(ctx, c)
	if err == nil || res.Next != 6 {
		t.Fatalf("failing sync %+v, %v; want an error after 6 entries", res, err)
	}
	c.failAt = 0
	if res, err = tr.Sync(ctx, c); err != nil || res.From != 6 || res.Next != 10 {
		t.Fatalf("resumed sync %+v, %v; want 6..10", res, err)
	}
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	c := newFakeChain()
	c.Append(fleetAddr, finding(0), finding(1), finding(2))
	p := &fakePoster{}
	tr := MustOpen(t, dataDir, Config{MetaEvery: time.Hour})

	now := t0.Add(time.Hour)
	out, err := tr.Run(ctx, c, p, now)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Wrote || !out.Posted || len(p.texts) != 1 {
		t.Fatalf("first run wrote=%v posted=%v (%d posts), want a report and one meta summary", out.Wrote, out.Posted, len(p.texts))
	}
	for _, name := range []string{LatestJSON, LatestMD} {
		if _, err := os.Stat(filepath.Join(dataDir, ReportsDir, name)); err != nil {
			t.Error(err)
		}
	}
	hist, _ := filepath.Glob(filepath.Join(dataDir, ReportsDir, HistoryDir, "*.json"))
	if len(hist) != 1 || !strings.HasSuffix(hist[0], now.Format(historyLayout)+".json") {
		t.Errorf("history %v, want one dated report", hist)
	}
	meta := p.texts[0]
	if !strings.HasPrefix(meta, "qa/v1 source=qa-triage sev=meta surface=fleet kind=meta\n") {
		t.Errorf("meta summary header: %q", meta)
	}

	// The meta summary lands in the log: it is not a finding, and the top 3
	// did not change, so nothing is posted again.
	c.Append(fleetAddr, meta)
	out, err = tr.Run(ctx, c, p, now.Add(2*time.Hour))
	if err != nil || out.Posted || out.Report.Totals.Meta != 1 {
		t.Fatalf("second run posted=%v meta=%d err=%v, want no post and 1 meta entry", out.Posted, out.Report.Totals.Meta, err)
	}
	// Nothing new: the report files are not rewritten.
	if out, err = tr.Run(ctx, c, p, now.Add(3*time.Hour)); err != nil || out.Wrote {
		t.Errorf("idle run wrote=%v err=%v, want no write", out.Wrote, err)
	}

	// A new top finding changes the top 3, but within MetaEvery of the last
	// summary nothing is posted; after it, one is.
	c.Append(fleetAddr, "qa/v1 source=qa-security sev=critical surface=chain run=r-9\nadmin reset callable\nrepro: qa_chain {\"method\":\"eth_call\",\"params\":{\"data\":\"0x8f1c2a3b\"}}")
	last := now
	if out, err = tr.Run(ctx, c, p, last.Add(30*time.Minute)); err != nil || out.Posted {
		t.Fatalf("run within MetaEvery posted=%v err=%v", out.Posted, err)
	}
	if out, err = tr.Run(ctx, c, p, last.Add(61*time.Minute)); err != nil || !out.Posted || len(p.texts) != 2 {
		t.Fatalf("run after MetaEvery posted=%v (%d posts) err=%v, want a second summary", out.Posted, len(p.texts), err)
	}
	if !strings.Contains(p.texts[1], "[critical chain] admin reset callable") {
		t.Errorf("second summary does not lead with the new finding:\n%s", p.texts[1])
	}

	// The chain is down: Run fails, and the last report is still there with
	// its time, for `fleetd report` to show.
	c.down = errors.New("dial tcp: connection refused")
	if _, err = tr.Run(ctx, c, p, last.Add(5*time.Hour)); err == nil {
		t.Fatal("run with the chain down succeeded")
	}
	saved, err := LoadReport(filepath.Join(dataDir, ReportsDir))
	if err != nil {
		t.Fatal(err)
	}
	// Written when entry 4 arrived; the later run had nothing new to write.
	if !saved.GeneratedAt.Equal(last.Add(30*time.Minute)) || saved.Head != 5 {
		t.Errorf("saved report generated %v head %d, want the one written when entry 4 arrived", saved.GeneratedAt, saved.Head)
	}
	if saved.Clusters[0].Title != "admin reset callable" || saved.Block == 0 || saved.BlockHash == "" {
		t.Errorf("saved report: first %q block %d hash %q", saved.Clusters[0].Title, saved.Block, saved.BlockHash)
	}
}

func TestRunPostFailureIsRetried(t *testing.T) {
	ctx := context.Background()
	c := newFakeChain()
	c.Append(fleetAddr, finding(0))
	p := &fakePoster{err: errors.New("sponsor out of funds")}
	tr := MustOpen(t, t.TempDir(), Config{})
	if _, err := tr.Run(ctx, c, p, t0); err == nil || !strings.Contains(err.Error(), "sponsor out of funds") {
		t.Fatalf("run with a failing poster: %v", err)
	}
	p.err = nil
	if out, err := tr.Run(ctx, c, p, t0.Add(time.Minute)); err != nil || !out.Posted {
		t.Fatalf("retry posted=%v err=%v, want the summary posted now", out.Posted, err)
	}
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	MustOpen(t, dir, Config{})
	if _, err := Open(dir, Config{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}
