package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/faultnet"
)

// TestDialLazyWhileTheNodeIsDown: a lazy Dial returns a client while the
// node is down (a daemon starting during an outage); transactions fail with
// ErrUnreachable, Ping says so, and once the node is back the chain id is
// read and checked, and sending works. A node of another chain is refused
// at first contact.
func TestDialLazyWhileTheNodeIsDown(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	p, err := faultnet.Start(strings.TrimPrefix(b.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetDown(true)
	url := "http://" + p.Addr()
	if _, err := Dial(ctx, url, Options{Timeout: time.Second}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("eager Dial of a down node: %v, want ErrUnreachable", err)
	}
	c, err := Dial(ctx, url, Options{Timeout: time.Second, Lazy: true})
	if err != nil {
		t.Fatalf("lazy Dial of a down node: %v", err)
	}
	defer c.Close()
	if id := c.ChainID(); id != 0 {
		t.Errorf("chain id before contact: %d, want 0", id)
	}
	to, _ := GenerateKey()
	if _, err := c.Transfer(ctx, b.sponsor, to.Address(), big.NewInt(1)); !errors.Is(err, ErrUnreachable) {
		t.Errorf("transfer while down: %v, want ErrUnreachable", err)
	}
	if err := c.Ping(ctx); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Ping while down: %v, want ErrUnreachable", err)
	}
	p.SetDown(false)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping once up: %v", err)
	}
	if c.ChainID() == 0 {
		t.Error("chain id still unknown after the node answered")
	}
	if _, err := c.Transfer(ctx, b.sponsor, to.Address(), big.NewInt(1)); err != nil {
		t.Errorf("transfer once up: %v", err)
	}
	// Down again: Ping sees it (the head read fails).
	p.SetDown(true)
	if err := c.Ping(ctx); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Ping down again: %v, want ErrUnreachable", err)
	}
	p.SetDown(false)

	wrong, err := Dial(ctx, url, Options{Timeout: time.Second, Lazy: true, ChainID: 1})
	if err == nil {
		wrong.Close()
		t.Error("lazy Dial of a node of another chain succeeded")
	} else if !errors.Is(err, ErrWrongChain) {
		t.Errorf("lazy Dial of another chain: %v, want ErrWrongChain", err)
	}
	p.SetDown(true)
	late, err := Dial(ctx, url, Options{Timeout: time.Second, Lazy: true, ChainID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	p.SetDown(false)
	if err := late.Ping(ctx); !errors.Is(err, ErrWrongChain) {
		t.Errorf("first contact with another chain: %v, want ErrWrongChain", err)
	}
}

// TestReadsRetriedSendsNot: a node that resets or cuts short its answers
// now and then costs a read a retry, not a failure; a transaction's send
// is never retried by the transport (it reached the node: sending it again
// is the send path's call), so it runs once.
func TestReadsRetriedSendsNot(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	p, err := faultnet.Start(strings.TrimPrefix(b.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := Dial(ctx, "http://"+p.Addr(), Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var reads, sends atomic.Int32
	p.SetRule(func(req []byte) faultnet.Fault {
		switch {
		case bytes.Contains(req, []byte(`"eth_sendRawTransaction"`)):
			sends.Add(1)
			return faultnet.Fault{Kind: faultnet.Reset}
		case bytes.Contains(req, []byte(`"eth_getBalance"`)) || bytes.Contains(req, []byte(`"eth_blockNumber"`)):
			switch reads.Add(1) % 3 {
			case 1:
				return faultnet.Fault{Kind: faultnet.Reset}
			case 2:
				return faultnet.Fault{Kind: faultnet.Truncate}
			}
		}
		return faultnet.Fault{}
	})
	for range 5 {
		if _, err := c.BlockNumber(ctx); err != nil {
			t.Fatalf("block number with a fault on two answers in three: %v", err)
		}
		if _, err := c.Balance(ctx, b.sponsor.Address()); err != nil {
			t.Fatalf("balance with a fault on two answers in three: %v", err)
		}
	}
	to, _ := GenerateKey()
	if _, err := c.Transfer(ctx, b.sponsor, to.Address(), big.NewInt(7)); err == nil {
		t.Error("a transfer whose answer was reset reported success")
	}
	if n := sends.Load(); n != 1 {
		t.Errorf("the transaction was sent %d times, want once", n)
	}
	p.SetRule(nil)
	// The node took the transaction before the answer was cut: it lands
	// when the dev chain seals its block, which a loaded machine delays.
	var bal *big.Int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		bal, err = c.Balance(ctx, to.Address())
		if err == nil && bal.Sign() != 0 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || bal.Cmp(big.NewInt(7)) != 0 {
		t.Errorf("recipient holds %v (%v), want 7 wei: the transfer ran once", bal, err)
	}
	t.Logf("faults injected: %v", p.Counts())
}

// TestSendAfterADroppedTransaction: the node took a transaction and lost it
// (a restart empties its pool), so its receipt never comes. The next send
// from the same key must not count on the lost nonce: on that nonce plus
// one it would wait behind a gap nothing fills (TestNodeRestartUnderDaemon's
// outbox that never emptied); it re-reads the node's pending nonce and lands.
func TestSendAfterADroppedTransaction(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	var dropped atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &req)
		if req.Method == "eth_sendRawTransaction" && dropped.Add(1) == 1 {
			// Taken, then lost with the node's pool.
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x%064x"}`, req.ID, 1)
			return
		}
		resp, err := http.Post(b.url, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer front.Close()
	c, err := Dial(ctx, front.URL, Options{Timeout: 2 * time.Second, ReceiptTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	to, _ := GenerateKey()
	if _, err := c.Transfer(ctx, b.sponsor, to.Address(), big.NewInt(7)); !errors.Is(err, ErrReceiptTimeout) {
		t.Fatalf("transfer the node dropped: %v, want %v", err, ErrReceiptTimeout)
	}
	if _, err := c.Transfer(ctx, b.sponsor, to.Address(), big.NewInt(8)); err != nil {
		t.Fatalf("the next transfer from the key: %v", err)
	}
	if bal, err := c.Balance(ctx, to.Address()); err != nil || bal.Int64() != 8 {
		t.Errorf("recipient holds %v (%v), want 8 wei", bal, err)
	}
}
