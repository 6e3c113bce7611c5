package chain

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
	"golang.org/x/sync/errgroup"
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
	signer := types.LatestSignerForChainID(c.chainID.Load())
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
				tx, err := types.SignNewTx(k.priv, signer, &types.DynamicFeeTx{ChainID: c.chainID.Load(), Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
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

// BenchmarkScan100k reads a 100,000-entry v1 log of ~200-byte entries from
// the embedded dev chain, the old way and the new way, in one run:
//
//	go test ./chain -run '^$' -bench 'Scan100k' -benchtime 3x -timeout 30m
//
// before: one feedbackRange page per request, one after the other, decoded
// by go-ethereum's ABI unpacker (the reader until issue 14). after: Scan.
// node=process runs the node in a child process, as a real deployment
// does, so B/op, alloc-B/entry and cpu-s/op are the reader's own (fleetd's
// process) and node-cpu-s/op the node's; node=inproc runs it in the
// benchmark's process, as `fleetd demo` does, so the figures add up both.
// The log is loaded into the genesis block (devchain.Config.Preload) with
// the storage layout solc gives FeedbackLog, instead of 100,000
// transactions; the setup reads entries back to check the layout.
func BenchmarkScan100k(b *testing.B) {
	benchScanBeforeAfter(b, 100_000, 200)
}

// BenchmarkScan10kPreloaded is BenchmarkScan100k at a tenth of the size.
func BenchmarkScan10kPreloaded(b *testing.B) {
	benchScanBeforeAfter(b, 10_000, 200)
}

func benchScanBeforeAfter(b *testing.B, n, textLen int) {
	for _, where := range []string{"process", "inproc", "process-disk", "inproc-disk"} {
		// A level of its own, so -bench 'Scan100k/node=inproc' skips the
		// other nodes' preload.
		b.Run("node="+where, func(b *testing.B) { benchScanNode(b, where, n, textLen) })
	}
}

// benchScanNode is one node of benchScanBeforeAfter: "process" or "inproc",
// with "-disk" for a chain whose database is on disk (devchain.Config.OnDisk).
func benchScanNode(b *testing.B, where string, n, textLen int) {
	ctx := context.Background()
	var l *FeedbackLog
	var want func(int) string
	nodeCPU := func() time.Duration { return 0 }
	nodeProfile := func(string) {}
	onDisk := strings.HasSuffix(where, "-disk")
	if strings.HasPrefix(where, "process") {
		var pid int
		var node *benchNode
		node, l, want, pid = nodeProcess(b, n, textLen, onDisk)
		nodeCPU = func() time.Duration { return procCPU(pid) }
		nodeProfile = node.profile
	} else {
		_, l, want = preloadedLog(b, n, textLen, onDisk)
	}
	// The reader before issue 14 dialled with gzip on; Scan's client
	// turns it off for nodes on this machine.
	legacy := dialLegacy(b, l.c.url).FeedbackLog(l.Address())
	for _, tc := range []struct {
		name string
		scan func(context.Context, uint64, func([]Entry) error) (ScanResult, error)
	}{{"before", legacy.legacyScan}, {"after", l.Scan}, {"override", l.overrideScan}} {
		if onDisk && tc.name != "after" {
			continue // the database is the change here: compare with node=<where>/after
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			stopProfile := startProfile(b, where+"-"+tc.name, nodeProfile)
			c0, n0 := cpuTime(), nodeCPU()
			for b.Loop() {
				got := 0
				if _, err := tc.scan(ctx, 0, func(p []Entry) error {
					if p[0].Text != want(got) || p[0].Index != uint64(got) {
						return fmt.Errorf("entry %d: %q", got, p[0].Text)
					}
					got += len(p)
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("scanned %d entries, want %d", got, n)
				}
			}
			runtime.ReadMemStats(&ms1)
			b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
			if strings.HasPrefix(where, "process") {
				b.ReportMetric((nodeCPU()-n0).Seconds()/float64(b.N), "node-cpu-s/op")
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entries/s")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n*b.N), "alloc-B/entry")
			stopProfile() // after the figures: it forces a GC
		})
	}
}

// dialLegacy dials url the way Dial did before issue 14: the default
// transport (gzip on) and no direct HTTP batches.
func dialLegacy(tb testing.TB, url string) *Client {
	tb.Helper()
	c := mustDial(tb, url)
	rc, err := rpc.DialOptions(context.Background(), url, rpc.WithHTTPClient(&http.Client{Timeout: c.opts.Timeout}))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rc.Close)
	c.rpc, c.eth, c.http = rc, ethclient.NewClient(rc), nil
	return c
}

// TestBenchNode is not a test: it is the node process of the node=process
// benchmarks, started by nodeProcess with FLEETD_BENCH_NODE=n,textLen,disk. It
// preloads the log, prints "url address", and serves until stdin closes.
func TestBenchNode(t *testing.T) {
	spec := os.Getenv("FLEETD_BENCH_NODE")
	if spec == "" {
		t.Skip("the node process of BenchmarkScan100k")
	}
	var n, textLen int
	var onDisk bool
	if _, err := fmt.Sscanf(spec, "%d,%d,%t", &n, &textLen, &onDisk); err != nil {
		t.Fatal(err)
	}
	_, l, _ := preloadedLog(t, n, textLen, onDisk)
	fmt.Printf("%s %s\n", l.c.url, l.Address())
	// Each stdin line is a path to start a CPU profile in, or "" to stop it:
	// the parent profiles the node around its scans only, not the preload.
	in := bufio.NewScanner(os.Stdin)
	var prof *os.File
	for in.Scan() {
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
			prof = nil
		}
		if path := in.Text(); path != "" {
			// The live heap first: what every GC cycle of the scans marks.
			// (A heap profile is as of the last complete cycle but one.)
			runtime.GC()
			runtime.GC()
			hf, err := os.Create(strings.TrimSuffix(path, ".pprof") + ".heap.pprof")
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(hf, 0)
				hf.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
			prof = f
		}
		fmt.Println("ok") // the parent starts its scans (and its clocks) now
	}
	if prof != nil {
		pprof.StopCPUProfile()
		prof.Close()
	}
}

// benchNode is the stdin and stdout of a TestBenchNode process.
type benchNode struct {
	tb     testing.TB
	stdin  io.Writer
	stdout *bufio.Reader
}

// profile asks the node to write a CPU profile to path from now on, or to
// stop profiling for "", and waits until it has.
func (n *benchNode) profile(path string) {
	fmt.Fprintln(n.stdin, path)
	if line, err := n.stdout.ReadString('\n'); err != nil || line != "ok\n" {
		n.tb.Fatalf("node process answered %q, %v", line, err)
	}
}

// startProfile starts CPU profiles of this process and of the node process
// (through nodeProfile) into $FLEETD_BENCH_CPUPROFILE/<name>.{reader,node}.pprof
// when that variable names a directory, so a profile covers the scans and
// not the minutes of preload before them. It returns the function that
// stops both.
func startProfile(tb testing.TB, name string, nodeProfile func(string)) func() {
	tb.Helper()
	dir := os.Getenv("FLEETD_BENCH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".reader.pprof"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	nodeProfile(filepath.Join(dir, name+".node.pprof"))
	// Allocation profiles before and after: `go tool pprof -base` of the two
	// is what the scans allocated.
	writeAllocs := func(path string) {
		runtime.GC() // the allocs profile is as of the last GC
		af, err := os.Create(path)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(af, 0)
			af.Close()
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	writeAllocs(filepath.Join(dir, name+".allocs0.pprof"))
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		nodeProfile("")
		writeAllocs(filepath.Join(dir, name+".allocs1.pprof"))
	}
}

// nodeProcess starts TestBenchNode in a child process and returns a handle
// on its log, the text of entry i, and the child's pid.
func nodeProcess(tb testing.TB, n, textLen int, onDisk bool) (*benchNode, *FeedbackLog, func(int) string, int) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchNode$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("FLEETD_BENCH_NODE=%d,%d,%t", n, textLen, onDisk))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		tb.Fatalf("node process: %v", err)
	}
	url, addr, _ := strings.Cut(strings.TrimSpace(line), " ")
	a, err := fleet.ParseAddress(addr)
	if err != nil {
		tb.Fatalf("node process said %q: %v", line, err)
	}
	text := func(i int) string {
		t := fmt.Sprintf("qa/v1 source=qa-bench sev=low surface=chain\nentry %d ", i)
		return t + strings.Repeat("x", max(0, textLen-len(t)))
	}
	return &benchNode{tb: tb, stdin: stdin, stdout: out}, mustDial(tb, url).FeedbackLog(a), text, cmd.Process.Pid
}

// legacyScan is Scan as it was before issue 14, kept to measure against:
// pages read one at a time and unpacked by go-ethereum's ABI decoder.
func (l *FeedbackLog) legacyScan(ctx context.Context, from uint64, fn func([]Entry) error) (ScanResult, error) {
	num, hash, _, err := l.c.Head(ctx)
	if err != nil {
		return ScanResult{}, err
	}
	block := new(big.Int).SetUint64(num)
	res := ScanResult{Next: from, Block: num, BlockHash: hash}
	count, err := l.countAt(ctx, block)
	if err != nil {
		return res, err
	}
	size := uint64(firstPage)
	for res.Next < count {
		n := min(size, count-res.Next)
		page, err := l.rangeAt(ctx, res.Next, n, block)
		if err != nil {
			if ctx.Err() != nil || n == 1 || IsRevert(err, "IndexOutOfRange") {
				return res, err
			}
			size = max(1, n/2)
			continue
		}
		if len(page) == 0 {
			break
		}
		if err := fn(page); err != nil {
			return res, err
		}
		res.Next += uint64(len(page))
		longest := 0
		for _, e := range page {
			longest = max(longest, len(e.Text))
		}
		size = pageFor(longest)
	}
	return res, nil
}

// preloadedLog starts a dev chain whose genesis holds a v1 FeedbackLog with
// n entries of about textLen bytes, and returns a client, the log, and the
// text of entry i. The runtime code comes from a real deployment on a
// throwaway chain, at the address the same deployment gets on this one.
func preloadedLog(tb testing.TB, n, textLen int, onDisk bool) (*Client, *FeedbackLog, func(int) string) {
	tb.Helper()
	ctx := context.Background()
	sponsor, err := GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	funded := []devchain.Account{{Address: sponsor.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(1000))}}
	scratch, err := devchain.Start(ctx, devchain.Config{Funded: funded})
	if err != nil {
		tb.Fatal(err)
	}
	sc := mustDial(tb, scratch.URL())
	deployed, _, err := sc.DeployFeedbackLog(ctx, sponsor)
	if err != nil {
		tb.Fatal(err)
	}
	code, err := sc.eth.CodeAt(ctx, deployed.addr, nil)
	if err != nil {
		tb.Fatal(err)
	}
	scratch.Close()

	text := func(i int) string {
		t := fmt.Sprintf("qa/v1 source=qa-bench sev=low surface=chain\nentry %d ", i)
		return t + strings.Repeat("x", max(0, textLen-len(t)))
	}
	start := time.Now()
	ch, err := devchain.Start(ctx, devchain.Config{Funded: funded, OnDisk: onDisk, Preload: []devchain.Preloaded{{
		Address: deployed.addr, Code: code, Storage: v1Storage(n, text, sponsor.Address(), uint64(time.Now().Unix())),
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ch.Close() })
	c := mustDial(tb, ch.URL())
	l := c.FeedbackLog(fleet.Address(deployed.addr))
	if got, err := l.Count(ctx); err != nil || got != uint64(n) {
		tb.Fatalf("preloaded log holds %d entries (%v), want %d", got, err, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		e, err := l.At(ctx, uint64(i))
		if err != nil || e.Text != text(i) || e.Sender != sponsor.Address() {
			tb.Fatalf("preloaded entry %d = %+v, %v; want %q", i, e, err, text(i))
		}
	}
	tb.Logf("preloaded %d entries in the genesis block in %s", n, time.Since(start).Round(time.Millisecond))
	return c, l, text
}

// v1Storage lays out FeedbackLog's storage for n entries as solc does:
// slot 0 is Entry[] _entries (its length); entry i's two slots start at
// keccak256(0) + 2i, the first packing sender (low 20 bytes) and timestamp
// (the 8 bytes above), the second the string (short: bytes and 2·length in
// the low byte; long: 2·length+1, the bytes from keccak256(slot) on).
func v1Storage(n int, text func(int) string, sender fleet.Address, ts uint64) map[[32]byte][32]byte {
	st := make(map[[32]byte][32]byte, n*9)
	word := func(x *big.Int) (w [32]byte) { x.FillBytes(w[:]); return w }
	st[[32]byte{}] = word(big.NewInt(int64(n)))
	base := new(big.Int).SetBytes(crypto.Keccak256(make([]byte, 32)))
	mod := new(big.Int).Lsh(big.NewInt(1), 256)
	slot := new(big.Int)
	for i := range n {
		slot.Add(base, big.NewInt(int64(2*i)))
		slot.Mod(slot, mod)
		var head [32]byte
		copy(head[12:], sender[:])
		binary.BigEndian.PutUint64(head[4:12], ts)
		st[word(slot)] = head
		slot.Add(slot, big.NewInt(1))
		slot.Mod(slot, mod)
		t := []byte(text(i))
		if len(t) < 32 {
			var w [32]byte
			copy(w[:], t)
			w[31] = byte(2 * len(t))
			st[word(slot)] = w
			continue
		}
		st[word(slot)] = word(big.NewInt(int64(2*len(t) + 1)))
		sk := word(slot)
		data := new(big.Int).SetBytes(crypto.Keccak256(sk[:]))
		for k := 0; k*32 < len(t); k++ {
			var w [32]byte
			copy(w[:], t[k*32:])
			d := new(big.Int).Add(data, big.NewInt(int64(k)))
			st[word(d.Mod(d, mod))] = w
		}
	}
	return st
}

// BenchmarkScan10kV2 fills a v1 and a v2 log with the same 10,000 entries
// of ~200 bytes by transactions (v2 texts live in logs, which no genesis can
// hold) and reads each with Scan:
//
//	go test ./chain -run '^$' -bench 'Scan10kV2' -benchtime 3x
func BenchmarkScan10kV2(b *testing.B) {
	be := mustDevchain(b)
	ctx := context.Background()
	c := mustDial(b, be.url)
	const n = 10_000
	for _, ver := range []int{1, 2} {
		l, _, err := deployVersion(ctx, c, be.sponsor, ver)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		fillFast(b, c, l, be.sponsor, n, 200, 32)
		b.Logf("filled v%d with %d entries in %s", ver, n, time.Since(start).Round(time.Millisecond))
		b.Run(fmt.Sprintf("v%d", ver), func(b *testing.B) {
			stopProfile := timeScans(b, l, n, fmt.Sprintf("v%d", ver))
			stopProfile()
		})
	}
}

// timeScans times full scans of l (n entries each) in b.Loop, profiled as
// name (startProfile), and reports CPU, throughput and allocation per entry.
// It returns the profile's stop, for the caller to call once it has taken
// its own figures.
func timeScans(b *testing.B, l *FeedbackLog, n int, name string) (stopProfile func()) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	stopProfile = startProfile(b, name, func(string) {})
	c0 := cpuTime()
	for b.Loop() {
		got := 0
		if _, err := l.Scan(ctx, 0, func(p []Entry) error { got += len(p); return nil }); err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("scanned %d entries, want %d", got, n)
		}
	}
	runtime.ReadMemStats(&ms1)
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entries/s")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(n*b.N), "alloc-B/entry")
	return stopProfile
}

// fundedChain starts an embedded chain configured as cfg whose sponsor, a
// fresh key, holds a million ether, and dials it; Cleanup closes it.
func fundedChain(b *testing.B, cfg devchain.Config) (*Client, *Key) {
	b.Helper()
	sponsor, err := GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	cfg.Funded = []devchain.Account{{Address: sponsor.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(1_000_000))}}
	ch, err := devchain.Start(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ch.Close() })
	return mustDial(b, ch.URL()), sponsor
}

// BenchmarkScanTx10k and BenchmarkScanTx100k read a v1 log filled by
// transactions (so its state sits where a running chain keeps it: pathdb's
// diff layers and write buffer, not a genesis block) from the embedded
// chain in this process, its database in memory and on disk:
//
//	go test ./chain -run '^$' -bench 'ScanTx100k' -benchtime 3x -timeout 30m
func BenchmarkScanTx10k(b *testing.B) { benchScanTx(b, 10_000) }

func BenchmarkScanTx100k(b *testing.B) { benchScanTx(b, 100_000) }

func benchScanTx(b *testing.B, n int) {
	for _, db := range []string{"memory", "disk"} {
		b.Run("db="+db, func(b *testing.B) {
			ctx := context.Background()
			c, sponsor := fundedChain(b, devchain.Config{OnDisk: db == "disk"})
			l, _, err := c.DeployFeedbackLog(ctx, sponsor)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			fillFast(b, c, l, sponsor, n, 200, 32)
			b.Logf("filled %d entries in %s", n, time.Since(start).Round(time.Millisecond))
			stopProfile := timeScans(b, l, n, "tx-"+db)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
			stopProfile()
		})
	}
}

// BenchmarkScan10kV2LogIndex is BenchmarkScan10kV2's v2 half on a chain
// running go-ethereum's log index (devchain.Config.LogIndex):
//
//	go test ./chain -run '^$' -bench 'Scan10kV2' -benchtime 3x
func BenchmarkScan10kV2LogIndex(b *testing.B) {
	ctx := context.Background()
	c, sponsor := fundedChain(b, devchain.Config{LogIndex: true})
	const n = 10_000
	l, _, err := deployVersion(ctx, c, sponsor, 2)
	if err != nil {
		b.Fatal(err)
	}
	fillFast(b, c, l, sponsor, n, 200, 32)
	timeScans(b, l, n, "v2-logindex")()
}

// leanRangeCode is the runtime code of a minimal FeedbackLog v1 reader, an
// experiment of issue 14 and not a part of Scan: overrideScan runs it in
// place of the log's own code through eth_call's state override, to measure
// how much of the node's CPU per entry is the EVM running v1's Solidity
// view (its copy loop and ABI encoding) rather than the SLOADs. Compiled by
// solc 0.8.37 (cancun, optimizer off, no metadata hash) from
//
//	contract LeanRange { fallback() external { assembly {
//	    let start := calldataload(0)  let count := calldataload(32)
//	    let n := sload(0)
//	    if gt(start, n) { start := n }  if gt(count, sub(n, start)) { count := sub(n, start) }
//	    mstore(0, 0)  let base := keccak256(0, 32)  let p := 0x80
//	    for { let i := 0 } lt(i, count) { i := add(i, 1) } {
//	        let s := add(base, mul(2, add(start, i)))
//	        mstore(p, sload(s))  let sl := add(s, 1)  let w := sload(sl)
//	        mstore(add(p, 32), w)  p := add(p, 64)
//	        if and(w, 1) {
//	            mstore(0, sl)  let d := keccak256(0, 32)
//	            let words := shr(5, add(shr(1, w), 31))
//	            for { let k := 0 } lt(k, words) { k := add(k, 1) } { mstore(p, sload(add(d, k)))  p := add(p, 32) }
//	        }
//	    }
//	    return(0x80, sub(p, 0x80))
//	} } }
const leanRangeCode = "0x6080604052348015600e575f5ffd5b505f356020355f54808311156021578092505b82810382111560305782810391505b5f5f5260205f2060805f5b8481101560a9578086016002028301805483526001810180548060208601526040850194506001811615609c57815f5260205f20601f8260011c0160051c5f5b81811015609857808301548852602088019750600181019050607b565b5050505b505050600181019050603b565b50608081036080f3fea164736f6c6343000825000a"

// overrideScan reads the log as Scan does (one block, pages in order, 16
// pages of 600 entries in flight, four at a time) through leanRangeCode.
func (l *FeedbackLog) overrideScan(ctx context.Context, from uint64, fn func([]Entry) error) (ScanResult, error) {
	num, hash, _, err := l.c.Head(ctx)
	if err != nil {
		return ScanResult{}, err
	}
	res := ScanResult{Next: from, Block: num, BlockHash: hash}
	count, err := l.countAt(ctx, new(big.Int).SetUint64(num))
	if err != nil {
		return res, err
	}
	blockArg := hexutil.EncodeUint64(num)
	override := map[common.Address]map[string]string{l.addr: {"code": leanRangeCode}}
	const page, window = 600, 16
	for res.Next < count {
		var pages [window][]Entry
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(4)
		for k := range window {
			start := res.Next + uint64(k)*page
			if start >= count {
				break
			}
			n := min(page, count-start)
			g.Go(func() error {
				data := make([]byte, 64)
				new(big.Int).SetUint64(start).FillBytes(data[:32])
				new(big.Int).SetUint64(n).FillBytes(data[32:])
				var out hexutil.Bytes
				args := struct {
					To   common.Address `json:"to"`
					Data hexutil.Bytes  `json:"data"`
					Gas  hexutil.Uint64 `json:"gas"`
				}{l.addr, data, 40_000_000}
				if err := l.c.rpc.CallContext(gctx, &out, "eth_call", args, blockArg, override); err != nil {
					return err
				}
				es, err := decodeLean(out, start, n)
				pages[k] = es
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return res, err
		}
		for _, p := range pages {
			if p == nil {
				break
			}
			if err := fn(p); err != nil {
				return res, err
			}
			res.Next += uint64(len(p))
		}
	}
	return res, nil
}

// decodeLean decodes leanRangeCode's answer for n entries from start.
func decodeLean(b []byte, start, n uint64) ([]Entry, error) {
	es := make([]Entry, 0, n)
	for len(b) >= 64 {
		head, w := b[:32], b[32:64]
		b = b[64:]
		var text string
		if w[31]&1 == 0 {
			text = string(w[:w[31]>>1])
		} else {
			size := new(big.Int).Rsh(new(big.Int).SetBytes(w), 1).Uint64()
			words := (size + 31) / 32
			if size > MaxText || uint64(len(b)) < 32*words {
				return nil, fmt.Errorf("entry %d: text of %d bytes in %d bytes", start+uint64(len(es)), size, len(b))
			}
			text = string(b[:size])
			b = b[32*words:]
		}
		var sender fleet.Address
		copy(sender[:], head[12:])
		es = append(es, Entry{Index: start + uint64(len(es)), Sender: sender, Time: time.Unix(int64(binary.BigEndian.Uint64(head[4:12])), 0).UTC(), Text: text})
	}
	if len(b) != 0 || uint64(len(es)) != n {
		return nil, fmt.Errorf("lean range %d+%d: %d entries, %d bytes left", start, n, len(es), len(b))
	}
	return es, nil
}
