package chain

import (
	"context"
	"fmt"
	"math/big"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// BenchmarkScan10k reads a 10,000-entry log of ~200-byte entries from the
// embedded dev chain through feedbackRange pages (target: < 2 s per scan).
func BenchmarkScan10k(b *testing.B) {
	benchScan(b, 10_000, func(c *Client, l *FeedbackLog, sponsor *Key) { fillFast(b, c, l, sponsor, 10_000, 200, 32) })
}

// benchScan fills a fresh log with n entries and times full scans of it.
func benchScan(b *testing.B, n int, fillLog func(c *Client, l *FeedbackLog, sponsor *Key)) {
	be := mustDevchain(b)
	c := mustDial(b, be.url)
	l, _, err := c.DeployFeedbackLog(context.Background(), be.sponsor)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	fillLog(c, l, be.sponsor)
	if got, _ := l.Count(context.Background()); got != uint64(n) {
		b.Fatalf("filled %d entries, want %d", got, n)
	}
	b.Logf("filled %d entries in %s", n, time.Since(start).Round(time.Millisecond))
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		if _, err := l.Scan(context.Background(), 0, func(p []Entry) error { got += len(p); return nil }); err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("scanned %d entries, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkSponsoredSubmit measures EIP-712 sponsored submissions on the
// embedded dev chain: one identity at a time (each waits for its receipt),
// and 8 identities relayed concurrently by one sponsor.
func BenchmarkSponsoredSubmit(b *testing.B) {
	be := mustDevchain(b)
	c := mustDial(b, be.url)
	l, _, err := c.DeployFeedbackLog(context.Background(), be.sponsor)
	if err != nil {
		b.Fatal(err)
	}
	text := "qa/v1 source=qa-bench sev=info surface=chain\nsponsored submission benchmark entry"
	b.Run("identities=1", func(b *testing.B) {
		id, _ := GenerateKey()
		for b.Loop() {
			if _, err := l.SubmitFor(context.Background(), id, be.sponsor, text); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submissions/s")
	})
	b.Run("identities=8", func(b *testing.B) {
		ids := make([]*Key, 8)
		for i := range ids {
			ids[i], _ = GenerateKey()
		}
		var next int
		var mu sync.Mutex
		// RunParallel starts p×GOMAXPROCS goroutines: make that at least 8.
		b.SetParallelism((len(ids) + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			mu.Lock()
			id := ids[next%len(ids)]
			next++
			mu.Unlock()
			for pb.Next() {
				if _, err := l.SubmitFor(context.Background(), id, be.sponsor, text); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submissions/s")
	})
}

// fillFast appends n entries of about textLen bytes, pipelined: each of
// `keys` funded keys keeps up to 16 signed transactions in flight, so the
// on-demand chain seals hundreds per block. Only benchmarks use it.
func fillFast(tb testing.TB, c *Client, l *FeedbackLog, sponsor *Key, n, textLen, keys int) {
	tb.Helper()
	ctx := context.Background()
	ks := make([]*Key, keys)
	for i := range ks {
		ks[i], _ = GenerateKey()
		if _, err := c.Transfer(ctx, sponsor, ks[i].Address(), new(big.Int).Mul(ether, big.NewInt(10))); err != nil {
			tb.Fatal(err)
		}
	}
	sample := l.b.PackSubmitFeedback(strings.Repeat("x", textLen))
	gas, err := c.eth.EstimateGas(ctx, ethereum.CallMsg{From: common.Address(ks[0].Address()), To: &l.addr, Data: sample})
	if err != nil {
		tb.Fatal(err)
	}
	gas = gasMargin(gas)
	head, _ := c.eth.HeaderByNumber(ctx, nil)
	tip, _ := c.eth.SuggestGasTipCap(ctx)
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(4)))
	signer := types.LatestSignerForChainID(c.chainID)
	var wg sync.WaitGroup
	errs := make(chan error, keys)
	for w, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var inflight []common.Hash
			for i, nonce := w, uint64(0); i < n; i, nonce = i+keys, nonce+1 {
				if len(inflight) == 16 {
					if _, err := c.waitReceipt(ctx, inflight[0]); err != nil {
						errs <- err
						return
					}
					inflight = inflight[1:]
				}
				text := fmt.Sprintf("qa/v1 source=qa-bench sev=low surface=chain\nentry %d ", i)
				text += strings.Repeat("x", max(0, textLen-len(text)))
				tx, err := types.SignNewTx(k.priv, signer, &types.DynamicFeeTx{ChainID: c.chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
					Gas: gas, To: &l.addr, Data: l.b.PackSubmitFeedback(text)})
				if err == nil {
					err = c.eth.SendTransaction(ctx, tx)
				}
				if err != nil {
					errs <- err
					return
				}
				inflight = append(inflight, tx.Hash())
			}
			for _, h := range inflight {
				if _, err := c.waitReceipt(ctx, h); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// BenchmarkScan100k reads a 100,000-entry log of ~200-byte entries from the
// embedded dev chain through feedbackRange pages.
func BenchmarkScan100k(b *testing.B) {
	benchScan(b, 100_000, func(c *Client, l *FeedbackLog, sponsor *Key) { fillFast(b, c, l, sponsor, 100_000, 200, 128) })
}

// BenchmarkWriters measures findings per second through one log with 1, 4
// and 8 writers, each its own client (its own connection and nonce state: a
// process), all signing for one fleet identity and posting keyed findings
// with distinct fingerprints. "sponsor=shared" relays with one sponsor key
// (writers contend for its account nonce); "sponsor=own" gives each writer
// its own sponsor key, the deployment docs/architecture.md recommends under
// heavy load.
func BenchmarkWriters(b *testing.B) {
	be := mustDevchain(b)
	ctx := context.Background()
	c0 := mustDial(b, be.url)
	l0, _, err := c0.DeployFeedbackLog(ctx, be.sponsor)
	if err != nil {
		b.Fatal(err)
	}
	identity, _ := GenerateKey()
	var seq atomicCounter
	for _, sponsorMode := range []string{"shared", "own"} {
		for _, writers := range []int{1, 4, 8} {
			b.Run(fmt.Sprintf("sponsor=%s/writers=%d", sponsorMode, writers), func(b *testing.B) {
				logs := make([]*FeedbackLog, writers)
				sponsors := make([]*Key, writers)
				for i := range logs {
					logs[i] = mustDial(b, be.url).FeedbackLog(l0.Address())
					sponsors[i] = be.sponsor
					if sponsorMode == "own" {
						sponsors[i], _ = GenerateKey()
						if _, err := c0.Transfer(ctx, be.sponsor, sponsors[i].Address(), new(big.Int).Mul(ether, big.NewInt(10))); err != nil {
							b.Fatal(err)
						}
					}
				}
				work := make(chan int)
				var wg sync.WaitGroup
				var failed atomicCounter
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range work {
							n := seq.next()
							text := fmt.Sprintf("qa/v1 source=qa-bench sev=info surface=chain fp=%016x\nwriter %d finding %d", n, w, n)
							if _, err := logs[w].SubmitKeyed(ctx, identity, sponsors[w], text, FingerprintKey(fmt.Sprintf("%016x", n)), time.Hour); err != nil {
								failed.next()
								b.Error(err)
							}
						}
					}()
				}
				for b.Loop() {
					work <- 0
				}
				close(work)
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "findings/s")
				if f := failed.load(); f > 0 {
					b.Errorf("%d posts failed", f)
				}
			})
		}
	}
}

type atomicCounter struct {
	mu sync.Mutex
	n  int
}

func (a *atomicCounter) next() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	return a.n
}

func (a *atomicCounter) load() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}
