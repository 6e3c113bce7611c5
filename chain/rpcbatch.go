package chain

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"
)

// Log pages are the one bulk transfer fleetd makes: a 100,000-entry read is
// ~80 MB of hex. go-ethereum's rpc client copies each result into a
// json.RawMessage from a decoder buffer it grows per response, and hexutil
// decodes it once more; callBatch reads the response into a reused buffer
// and hex-decodes each result in place into another, so the only
// allocations left per entry are its text and its Entry. Over HTTP only;
// for ws:// or ipc nodes it falls back to the rpc client's BatchCallContext.

// maxBatchResponse bounds a batch response body: far above what a batch of
// pages under the eth_call gas cap can return.
const maxBatchResponse = 256 << 20

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ethCall is one eth_call of a batch.
type ethCall struct {
	data []byte
	out  []byte // the decoded return data, valid until the batch's callback returns
	err  error  // the node's error for this call (a revert: decodeRevert it)
}

// callBatch runs calls to `to` at block as one JSON-RPC batch and then
// calls done, during which each call's out or err is set. The error is for
// the request as a whole (transport, HTTP status, an unparsable answer).
func (c *Client) callBatch(ctx context.Context, to common.Address, block string, calls []ethCall, done func([]ethCall) error) error {
	if c.http == nil || len(calls) == 1 {
		return c.callBatchRPC(ctx, to, block, calls, done)
	}
	req := bodyPool.Get().(*bytes.Buffer)
	defer bodyPool.Put(req)
	req.Reset()
	req.WriteByte('[')
	for i, call := range calls {
		if i > 0 {
			req.WriteByte(',')
		}
		req.WriteString(`{"jsonrpc":"2.0","id":`)
		req.WriteString(strconv.Itoa(i))
		req.WriteString(`,"method":"eth_call","params":[{"to":"`)
		req.WriteString(to.Hex())
		req.WriteString(`","data":"0x`)
		var buf [256]byte
		for d := call.data; len(d) > 0; {
			n := min(len(d), len(buf)/2)
			hex.Encode(buf[:], d[:n])
			req.Write(buf[:2*n])
			d = d[n:]
		}
		req.WriteString(`"},"`)
		req.WriteString(block)
		req.WriteString(`"]}`)
	}
	req.WriteByte(']')
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(req.Bytes()))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := bodyPool.Get().(*bytes.Buffer)
	defer bodyPool.Put(body)
	body.Reset()
	if _, err := body.ReadFrom(io.LimitReader(resp.Body, maxBatchResponse+1)); err != nil {
		return fmt.Errorf("batch response: %w", err)
	}
	if body.Len() > maxBatchResponse {
		return fmt.Errorf("batch response: over %d bytes", maxBatchResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("batch request: HTTP %s: %.200s", resp.Status, body.Bytes())
	}
	var answers []batchAnswer
	if err := json.Unmarshal(body.Bytes(), &answers); err != nil {
		// A provider refusing the batch answers with one error object.
		var one batchAnswer
		if json.Unmarshal(body.Bytes(), &one) == nil && one.Error != nil {
			return one.Error
		}
		return fmt.Errorf("batch response: %w", err)
	}
	seen := make([]bool, len(calls))
	scratch := outPool.Get().(*[]byte)
	defer outPool.Put(scratch)
	// Results are decoded into one shared buffer, so that done sees them
	// all at once: size it first.
	total := 0
	for _, a := range answers {
		total += len(a.Result) / 2
	}
	if cap(*scratch) < total {
		*scratch = make([]byte, 0, total)
	}
	buf := (*scratch)[:0]
	for _, a := range answers {
		if a.ID < 0 || a.ID >= len(calls) || seen[a.ID] {
			return fmt.Errorf("batch response: unexpected id %d", a.ID)
		}
		seen[a.ID] = true
		call := &calls[a.ID]
		if a.Error != nil {
			call.err = a.Error
			continue
		}
		hexs := a.Result
		if len(hexs) < 4 || hexs[0] != '"' || hexs[len(hexs)-1] != '"' || hexs[1] != '0' || (hexs[2] != 'x' && hexs[2] != 'X') {
			return fmt.Errorf("batch response: result %d is not a hex string", a.ID)
		}
		hexs = hexs[3 : len(hexs)-1]
		start := len(buf)
		buf = buf[:start+len(hexs)/2]
		if _, err := hex.Decode(buf[start:], hexs); err != nil {
			return fmt.Errorf("batch response: result %d: %w", a.ID, err)
		}
		call.out = buf[start:]
	}
	for i := range seen {
		if !seen[i] {
			return fmt.Errorf("batch response: no answer for call %d", i)
		}
	}
	*scratch = buf[:0]
	return done(calls)
}

var outPool = sync.Pool{New: func() any { b := make([]byte, 0, 1<<20); return &b }}

// callBatchRPC is callBatch through the rpc client (any transport).
func (c *Client) callBatchRPC(ctx context.Context, to common.Address, block string, calls []ethCall, done func([]ethCall) error) error {
	results := make([]hexutil.Bytes, len(calls))
	elems := make([]rpc.BatchElem, len(calls))
	for i := range calls {
		elems[i] = rpc.BatchElem{Method: "eth_call", Args: []any{callArgs{To: to, Data: calls[i].data}, block}, Result: &results[i]}
	}
	if err := c.batch(ctx, elems); err != nil {
		return err
	}
	for i := range calls {
		calls[i].out, calls[i].err = results[i], elems[i].Error
	}
	return done(calls)
}

// batchAnswer is one answer of a batch; Result stays a slice of the body.
type batchAnswer struct {
	ID     int          `json:"id"`
	Result inPlace      `json:"result"`
	Error  *answerError `json:"error"`
}

// inPlace keeps the raw JSON of a value without copying it: json.Unmarshal
// hands UnmarshalJSON a slice of its input, which outlives the call here
// because the input is the caller's buffer.
type inPlace []byte

func (p *inPlace) UnmarshalJSON(b []byte) error { *p = b; return nil }

// answerError is a JSON-RPC error object. It satisfies rpc.Error and
// rpc.DataError, so decodeRevert reads reverts out of it as it does out of
// the rpc client's errors.
type answerError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *answerError) Error() string  { return e.Message }
func (e *answerError) ErrorCode() int { return e.Code }
func (e *answerError) ErrorData() any {
	var s string
	if json.Unmarshal(e.Data, &s) == nil {
		return s
	}
	return nil
}

var (
	_ rpc.Error     = (*answerError)(nil)
	_ rpc.DataError = (*answerError)(nil)
)
