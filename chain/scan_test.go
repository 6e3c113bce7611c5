package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rpcProxy stands between the reader and a real node the way a public RPC
// provider does: it forwards JSON-RPC (single and batch requests) and can
// refuse eth_getLogs ranges wider than a limit, drop one log, or alter one.
type rpcProxy struct {
	node string // the real node
	url  string // the proxy

	mu        sync.Mutex
	maxBlocks uint64 // refuse eth_getLogs over more blocks (0: no limit)
	dropID    int64  // drop the FeedbackText log of this entry (-1: none)
	alterID   int64  // change one byte of this entry's text (-1: none)
	refused   int    // eth_getLogs requests refused for their range
	batches   int    // batch requests seen
	methods   map[string]int
}

type rpcMsg struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id,omitempty"`
	Method  string            `json:"method,omitempty"`
	Params  []json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage   `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func newRPCProxy(tb testing.TB, node string) *rpcProxy {
	tb.Helper()
	p := &rpcProxy{node: node, dropID: -1, alterID: -1, methods: map[string]int{}}
	srv := httptest.NewServer(p)
	tb.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *rpcProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	batch := bytes.HasPrefix(bytes.TrimSpace(body), []byte("["))
	var msgs []rpcMsg
	if batch {
		err = json.Unmarshal(body, &msgs)
	} else {
		msgs = make([]rpcMsg, 1)
		err = json.Unmarshal(body, &msgs[0])
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	if batch {
		p.batches++
	}
	for _, m := range msgs {
		p.methods[m.Method]++
	}
	p.mu.Unlock()
	out := make([]rpcMsg, len(msgs))
	for i, m := range msgs {
		out[i] = p.handle(m)
	}
	w.Header().Set("Content-Type", "application/json")
	if batch {
		json.NewEncoder(w).Encode(out)
	} else {
		json.NewEncoder(w).Encode(out[0])
	}
}

// handle forwards one call, applying the provider's rules to eth_getLogs.
func (p *rpcProxy) handle(m rpcMsg) rpcMsg {
	if m.Method == "eth_getLogs" && len(m.Params) == 1 {
		var f struct{ FromBlock, ToBlock string }
		json.Unmarshal(m.Params[0], &f)
		from, _ := strconv.ParseUint(strings.TrimPrefix(f.FromBlock, "0x"), 16, 64)
		to, _ := strconv.ParseUint(strings.TrimPrefix(f.ToBlock, "0x"), 16, 64)
		p.mu.Lock()
		limit := p.maxBlocks
		if limit > 0 && to-from+1 > limit {
			p.refused++
			p.mu.Unlock()
			out := rpcMsg{JSONRPC: "2.0", ID: m.ID}
			out.Error = &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{-32005, fmt.Sprintf("block range is too wide (max %d)", limit)}
			return out
		}
		p.mu.Unlock()
	}
	reqBody, _ := json.Marshal(m)
	resp, err := http.Post(p.node, "application/json", bytes.NewReader(reqBody))
	if err != nil {
		return rpcMsg{JSONRPC: "2.0", ID: m.ID, Error: &struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{-32000, err.Error()}}
	}
	defer resp.Body.Close()
	var out rpcMsg
	json.NewDecoder(resp.Body).Decode(&out)
	if m.Method == "eth_getLogs" && out.Result != nil {
		out.Result = p.tamper(out.Result)
	}
	return out
}

// tamper drops or alters the FeedbackText log of the chosen entries.
func (p *rpcProxy) tamper(result json.RawMessage) json.RawMessage {
	p.mu.Lock()
	drop, alter := p.dropID, p.alterID
	p.mu.Unlock()
	if drop < 0 && alter < 0 {
		return result
	}
	var logs []map[string]any
	if json.Unmarshal(result, &logs) != nil {
		return result
	}
	kept := logs[:0]
	for _, lg := range logs {
		topics, _ := lg["topics"].([]any)
		if len(topics) >= 2 && topics[0] == "0x"+fmt.Sprintf("%x", topicFeedbackText[:]) {
			id, _ := strconv.ParseInt(strings.TrimPrefix(topics[1].(string), "0x"), 16, 64)
			if id == drop {
				continue
			}
			if id == alter {
				data := lg["data"].(string)
				lg["data"] = data[:len(data)-66] + "7a" + data[len(data)-64:] // one byte of the text's last word
			}
		}
		kept = append(kept, lg)
	}
	b, _ := json.Marshal(kept)
	return b
}

// TestScanV2ProviderLimits reads a v2 log through a proxy that refuses wide
// eth_getLogs ranges (as public providers do), then one that drops a log and
// one that alters a text: the first must read everything, in order, by
// splitting ranges; the others must fail naming the entry, never skip it.
func TestScanV2ProviderLimits(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	c := mustDial(t, b.url)
	l, _, err := c.DeployFeedbackLogV2(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 40 {
		want = append(want, fmt.Sprintf("qa/v1 source=qa-smoke sev=low surface=docs\nentry %d %s", i, strings.Repeat("x", i*7)))
	}
	submitAll(t, l, b.sponsor, want) // one block each on the on-demand chain
	// Event watchers (triggers) see v1's FeedbackSubmitted on v2 as well.
	head, err := c.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := c.FilterLogs(ctx, l.Address(), TopicFeedbackSubmitted, 0, head); err != nil || len(evs) != len(want) {
		t.Errorf("FeedbackSubmitted logs of the v2 log: %d, %v; want %d", len(evs), err, len(want))
	}

	p := newRPCProxy(t, b.url)
	pc := mustDial(t, p.url)
	pl := pc.FeedbackLog(l.Address())
	pl.SetReadLimits(ReadLimits{LogBlocks: 16, PagesPerBatch: 3, Batches: 2})
	p.maxBlocks = 5
	read := func(from uint64) ([]string, error) {
		var got []string
		_, err := pl.Scan(ctx, from, func(page []Entry) error {
			for _, e := range page {
				if e.Index != from+uint64(len(got)) || e.Sender != b.sponsor.Address() {
					return fmt.Errorf("entry %d at position %d from %s", e.Index, len(got), e.Sender)
				}
				got = append(got, e.Text)
			}
			return nil
		})
		return got, err
	}
	got, err := read(0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("scan through a 5-block provider limit (-want +got):\n%s", diff)
	}
	if p.refused == 0 || p.batches == 0 {
		t.Errorf("proxy refused %d ranges and saw %d batches: the limit and batching were not exercised", p.refused, p.batches)
	}
	got, err = read(25)
	if err != nil || !cmp.Equal(want[25:], got) {
		t.Errorf("scan from 25: %d entries, %v", len(got), err)
	}
	if e, err := pl.At(ctx, 17); err != nil || e.Text != want[17] {
		t.Errorf("At(17) = %q, %v", e.Text, err)
	}
	if es, err := pl.Range(ctx, 30, 5); err != nil || len(es) != 5 || es[0].Text != want[30] || es[4].Index != 34 {
		t.Errorf("Range(30, 5) = %d entries, %v", len(es), err)
	}

	p.mu.Lock()
	p.dropID = 12
	p.mu.Unlock()
	if _, err := read(0); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "entry 12") {
		t.Errorf("scan with entry 12's log dropped = %v, want ErrIncomplete naming entry 12", err)
	}
	p.mu.Lock()
	p.dropID, p.alterID = -1, 33
	p.mu.Unlock()
	if _, err := read(0); !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "entry 33") {
		t.Errorf("scan with entry 33's text altered = %v, want ErrIncomplete naming entry 33", err)
	}
}

// TestScanV1Batches reads a v1 log through the proxy and checks pages travel
// in batch requests and arrive complete and in order; and that fn's error
// stops the scan and comes back as is.
func TestScanV1Batches(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	c := mustDial(t, b.url)
	l, _, err := c.DeployFeedbackLog(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 120 {
		want = append(want, fmt.Sprintf("entry %d %s", i, strings.Repeat("y", i%50)))
	}
	submitAll(t, l, b.sponsor, want)
	p := newRPCProxy(t, b.url)
	pl := mustDial(t, p.url).FeedbackLog(l.Address())
	pl.SetReadLimits(ReadLimits{PagesPerBatch: 3, Batches: 2})
	pl.pageCap = 7 // 18 pages: six batch requests, two at a time
	var got []string
	res, err := pl.Scan(ctx, 0, func(page []Entry) error {
		for _, e := range page {
			if e.Index != uint64(len(got)) {
				return fmt.Errorf("entry %d at position %d", e.Index, len(got))
			}
			got = append(got, e.Text)
		}
		return nil
	})
	if err != nil || res.Next != 120 {
		t.Fatalf("scan = %+v, %v", res, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("scan (-want +got):\n%s", diff)
	}
	if p.batches == 0 || p.methods["eth_call"] < 3 {
		t.Errorf("%d batches, %d eth_calls: pages were not batched", p.batches, p.methods["eth_call"])
	}
	stop := errors.New("enough")
	n := 0
	_, err = pl.Scan(ctx, 0, func(page []Entry) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("scan whose fn fails = %v after %d pages, want the error itself after 1", err, n)
	}
}
