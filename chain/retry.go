package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// retryTransport retries a JSON-RPC request over HTTP whose connection
// failed (refused, reset, or the answer cut short) when the request only
// reads: a node that drops a connection now and then should cost a read a
// few milliseconds, not a run. A request that sends a transaction is never
// retried here: whether it reached the node is unknown, and the send path
// (signAndSend) decides what a retry may do. Answers are read whole before
// they are returned, so a truncated one is seen here and retried; an HTTP
// error status is returned as is. Waits grow from retryBase, doubling, with
// up to half again of jitter; the request's context bounds them all.
type retryTransport struct {
	next     http.RoundTripper
	attempts int
	base     time.Duration
	maxBody  int64
}

const (
	readAttempts = 3
	retryBase    = 25 * time.Millisecond
	maxAnswer    = 256 << 20 // a page of log entries is well below this
)

// sendMethods are the JSON-RPC methods a retry could run twice.
var sendMethods = [][]byte{[]byte(`"eth_sendRawTransaction"`), []byte(`"eth_sendTransaction"`)}

func withRetries(next http.RoundTripper) http.RoundTripper {
	return &retryTransport{next: next, attempts: readAttempts, base: retryBase, maxBody: maxAnswer}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.GetBody == nil {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	tries := t.attempts
	for _, m := range sendMethods {
		if bytes.Contains(body, m) {
			tries = 1
		}
	}
	var lastErr error
	for try := 1; ; try++ {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := t.next.RoundTrip(r)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(io.LimitReader(resp.Body, t.maxBody))
			resp.Body.Close()
			if err == nil {
				resp.Body = io.NopCloser(bytes.NewReader(b))
				resp.ContentLength = int64(len(b))
				return resp, nil
			}
			err = fmt.Errorf("read answer: %w", err)
		}
		lastErr = err
		if try >= tries || !transient(req.Context(), err) {
			return nil, lastErr
		}
		wait := t.base << (try - 1)
		wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
		select {
		case <-time.After(wait):
		case <-req.Context().Done():
			return nil, lastErr
		}
	}
}

// transient reports whether err is a failure of the connection that another
// try may not meet: not the caller's cancellation or deadline.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}
