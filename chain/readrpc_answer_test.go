package chain

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain/devchain"
)

// TestReadRPCTellsNoAnswerFromAnAnswer checks that ReadRPC's error wraps
// ErrUnreachable exactly when the node gave no answer: a JSON-RPC error
// object or an HTTP status is an answer (the node, or a proxy in front of
// it, is reachable); a closed port is not. The smoke playbook's control
// check relies on the difference.
func TestReadRPCTellsNoAnswerFromAnAnswer(t *testing.T) {
	ctx := context.Background()
	ch, err := devchain.Start(ctx, devchain.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	c := mustDial(t, ch.URL())

	if out, err := c.ReadRPC(ctx, "eth_blockNumber", nil); err != nil || len(out) == 0 {
		t.Fatalf("eth_blockNumber on a live node: %s, %v", out, err)
	}
	_, err = c.ReadRPC(ctx, "eth_getBalance", json.RawMessage(`["0xnothex","latest"]`))
	if err == nil || errors.Is(err, ErrUnreachable) {
		t.Errorf("a JSON-RPC error from a live node: %v, want an error that is not ErrUnreachable", err)
	}

	// A proxy answering 503 in front of the node: an answer.
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream busy", http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	bc, err := Dial(ctx, busy.URL, Options{Lazy: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bc.Close)
	_, err = bc.ReadRPC(ctx, "eth_blockNumber", nil)
	if err == nil || errors.Is(err, ErrUnreachable) {
		t.Errorf("an HTTP 503 answer: %v, want an error that is not ErrUnreachable", err)
	}

	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = c.ReadRPC(ctx, "eth_blockNumber", nil)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("eth_blockNumber on a stopped node: %v, want ErrUnreachable", err)
	}
}
