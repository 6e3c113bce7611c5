package chain

import (
	"context"
	"errors"
	"math/big"
	"strings"
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
