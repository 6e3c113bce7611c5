package chain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/qafleet/fleetd/chain/feedwire"
	"github.com/qafleet/fleetd/fleet"
	"golang.org/x/sync/errgroup"
)

// ReadLimits bound how Scan talks to the node. Public RPC providers cap
// batch sizes, request rates and eth_getLogs ranges; the zero value takes
// the defaults, which suit a local node and the common providers.
type ReadLimits struct {
	// PagesPerBatch is how many range pages (v1) or log windows (v2) go in
	// one JSON-RPC batch request; default 4. 1 sends plain requests.
	PagesPerBatch int
	// Batches is how many batch requests are in flight at once; default 4.
	Batches int
	// LogBlocks caps the block range of one eth_getLogs request (v2);
	// default 2000, the smallest limit common providers impose. A request
	// the node refuses is retried on half the range.
	LogBlocks uint64
}

func (r ReadLimits) withDefaults() ReadLimits {
	if r.PagesPerBatch <= 0 {
		r.PagesPerBatch = 4
	}
	if r.Batches <= 0 {
		r.Batches = 4
	}
	if r.LogBlocks == 0 {
		r.LogBlocks = 2000
	}
	return r
}

// SetReadLimits changes how Scan batches its requests (see ReadLimits).
func (l *FeedbackLog) SetReadLimits(r ReadLimits) { l.limits = r.withDefaults() }

// Scan reads every entry from index from to the end of the log as of the
// latest block, calling fn with each page in order. All pages are read at one
// block so the result is a consistent snapshot. fn's error stops the scan
// and is returned as is; read errors are wrapped with the index they
// stopped at. Entries are read ahead while fn runs: pages of several
// feedbackRange calls travel in one JSON-RPC batch, several batches are in
// flight (ReadLimits), and each page is decoded once, straight into entries.
// A v2 log is read from its FeedbackText logs instead (see scanLogs).
func (l *FeedbackLog) Scan(ctx context.Context, from uint64, fn func([]Entry) error) (ScanResult, error) {
	num, hash, _, err := l.c.Head(ctx)
	if err != nil {
		return ScanResult{}, fmt.Errorf("scan feedback: %w", err)
	}
	block := new(big.Int).SetUint64(num)
	res := ScanResult{Next: from, Block: num, BlockHash: hash}
	v, err := l.Version(ctx)
	if err != nil {
		return res, fmt.Errorf("scan feedback: %w", err)
	}
	count, err := l.countAt(ctx, block)
	if err != nil {
		return res, fmt.Errorf("scan feedback: %w", err)
	}
	if from >= count {
		return res, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	windows := make(chan window, 1) // one window read ahead while fn runs
	fetchErr := make(chan error, 1)
	go func() {
		defer close(windows)
		var err error
		if v >= 2 {
			err = l.fetchLogs(ctx, from, count, num, windows)
		} else {
			err = l.fetchPages(ctx, from, count, block, windows)
		}
		fetchErr <- err
	}()
	for w := range windows {
		for _, page := range w.pages {
			if err := fn(page); err != nil {
				cancel()
				for range windows { // let the fetcher finish
				}
				<-fetchErr
				return res, err
			}
			res.Next += uint64(len(page))
		}
	}
	if err := <-fetchErr; err != nil {
		return res, fmt.Errorf("scan feedback from %d: %w", res.Next, err)
	}
	return res, nil
}

// window is a run of consecutive pages, in order.
type window struct{ pages [][]Entry }

// fetchPages reads entries [from, count) at block in windows of pages and
// sends them in order. Page size adapts to text size (pageFor); a page that
// fails is halved and the window is cut there.
func (l *FeedbackLog) fetchPages(ctx context.Context, from, count uint64, block *big.Int, out chan<- window) error {
	lim := l.limits
	size := uint64(firstPage)
	blockArg := hexutil.EncodeBig(block)
	for next := from; next < count; {
		// Plan one window: Batches batches of PagesPerBatch pages.
		var reqs []pageReq
		for at := next; at < count && len(reqs) < lim.Batches*lim.PagesPerBatch; {
			n := min(size, count-at)
			if l.pageCap > 0 {
				n = min(n, l.pageCap)
			}
			reqs = append(reqs, pageReq{start: at, n: n})
			at += n
		}
		g, gctx := errgroup.WithContext(ctx)
		for b := 0; b < len(reqs); b += lim.PagesPerBatch {
			batch := reqs[b:min(b+lim.PagesPerBatch, len(reqs))]
			g.Go(func() error { return l.fetchBatch(gctx, blockArg, batch) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		var w window
		for _, r := range reqs {
			if r.err != nil {
				err := decodeRevert(r.err, l.abi)
				if ctx.Err() != nil || r.n == 1 || IsRevert(err, "IndexOutOfRange") {
					return fmt.Errorf("feedback range %d+%d: %w", r.start, r.n, err)
				}
				size = max(1, r.n/2) // too costly for one call: halve, go on from here
				break
			}
			longest := 0
			for _, e := range r.page {
				longest = max(longest, len(e.Text))
			}
			w.pages = append(w.pages, r.page)
			next += r.n
			size = pageFor(longest)
		}
		if len(w.pages) == 0 {
			continue // the first page failed and was halved
		}
		select {
		case out <- w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// pageReq is one feedbackRange page: what to read, and what came back.
type pageReq struct {
	start, n uint64
	page     []Entry
	err      error // the node's error for this page (a revert, out of gas)
}

// fetchBatch reads pages in one batch request. When the node refuses the
// batch as a whole (some providers refuse batches, or batches this large),
// it asks for the pages one at a time.
func (l *FeedbackLog) fetchBatch(ctx context.Context, blockArg string, batch []pageReq) error {
	calls := make([]ethCall, len(batch))
	for i := range batch {
		calls[i].data = l.b.PackFeedbackRange(new(big.Int).SetUint64(batch[i].start), new(big.Int).SetUint64(batch[i].n))
	}
	decode := func(calls []ethCall, batch []pageReq) error {
		for i, call := range calls {
			if err := decodePage(call, &batch[i]); err != nil {
				return err
			}
		}
		return nil
	}
	rctx, cancel := l.c.reqCtx(ctx)
	err := l.c.callBatch(rctx, l.addr, blockArg, calls, func(calls []ethCall) error { return decode(calls, batch) })
	cancel()
	if err == nil || len(calls) == 1 || ctx.Err() != nil || errors.Is(err, feedwire.ErrMalformed) {
		return err
	}
	for i := range calls {
		rctx, cancel := l.c.reqCtx(ctx)
		one := []ethCall{{data: calls[i].data}}
		err := l.c.callBatch(rctx, l.addr, blockArg, one, func(one []ethCall) error { return decode(one, batch[i:i+1]) })
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// decodePage turns a feedbackRange answer into r's entries, copying each
// text once; a node error is left in r.err for the caller to act on.
func decodePage(call ethCall, r *pageReq) error {
	if call.err != nil {
		r.err = call.err
		return nil
	}
	es, err := feedwire.DecodeRange(nil, call.out, MaxText)
	if err != nil {
		return fmt.Errorf("feedback range %d+%d: %w", r.start, r.n, err)
	}
	if uint64(len(es)) != r.n {
		return fmt.Errorf("feedback range %d+%d: %w: node returned %d entries", r.start, r.n, feedwire.ErrMalformed, len(es))
	}
	r.page = make([]Entry, len(es))
	for k, e := range es {
		r.page[k] = Entry{Index: r.start + uint64(k), Sender: fleet.Address(e.Sender), Time: time.Unix(int64(e.Time), 0).UTC(), Text: e.Text}
	}
	return nil
}

// callArgs is eth_call's transaction object.
type callArgs struct {
	To   common.Address `json:"to"`
	Data hexutil.Bytes  `json:"data"`
}

// batch sends elems as one JSON-RPC batch (a plain call for one element).
// An error is returned only when the request as a whole failed; each
// element's own error is in its Error field.
func (c *Client) batch(ctx context.Context, elems []rpc.BatchElem) error {
	if len(elems) == 1 {
		err := c.rpc.CallContext(ctx, elems[0].Result, elems[0].Method, elems[0].Args...)
		var rerr rpc.Error
		if err != nil && errors.As(err, &rerr) {
			elems[0].Error, err = err, nil // the node answered: the element failed
		}
		return err
	}
	return c.rpc.BatchCallContext(ctx, elems)
}

// transport is the HTTP transport for a node at url: the default one, but
// for a node on this machine without gzip, which there costs CPU at both
// ends (a third of a log read's) and saves nothing.
func transport(url string) http.RoundTripper {
	u, err := neturl.Parse(url)
	if err != nil {
		return http.DefaultTransport
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return http.DefaultTransport
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	t.MaxIdleConnsPerHost = 16 // Scan keeps several requests in flight
	return t
}

// httpOnly returns hc when url is an http(s) URL, else nil.
func httpOnly(url string, hc *http.Client) *http.Client {
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return nil
	}
	return hc
}
