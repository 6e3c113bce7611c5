package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
)

// TestRPC: the rpc line unset, on a node that does not answer (NodeDown),
// on the wrong chain (the fix names chain.chain_id), and on the embedded
// dev chain, which answers with its chain id and head and hands back the
// client.
func TestRPC(t *testing.T) {
	ctx := context.Background()
	never := func(context.Context) (*chain.Client, error) { t.Error("dialled without an RPC URL"); return nil, nil }
	if c, cl := RPC(ctx, "", 0, never); c.OK || !c.Fatal || cl != nil || !strings.Contains(c.Detail, "chain.rpc is not set") {
		t.Errorf("unset: %+v", c)
	}
	down := func(context.Context) (*chain.Client, error) { return nil, fmt.Errorf("dial: %w", chain.ErrUnreachable) }
	if c, cl := RPC(ctx, "http://127.0.0.1:1", 0, down); c.OK || !c.NodeDown || cl != nil {
		t.Errorf("down: %+v", c)
	}
	wrong := func(context.Context) (*chain.Client, error) { return nil, fmt.Errorf("dial: %w", chain.ErrWrongChain) }
	if c, _ := RPC(ctx, "http://127.0.0.1:1", 5, wrong); c.OK || c.NodeDown || !strings.Contains(c.Fix, "chain.chain_id") {
		t.Errorf("wrong chain: %+v", c)
	}
	ch, err := devchain.Start(ctx, devchain.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var dialErr error
	c, cl := RPC(ctx, ch.URL(), 0, func(ctx context.Context) (*chain.Client, error) {
		cl, err := chain.Dial(ctx, ch.URL(), chain.Options{})
		dialErr = err
		return cl, err
	})
	if cl == nil {
		t.Fatalf("dev chain: %+v (%v)", c, dialErr)
	}
	defer cl.Close()
	if !c.OK || !strings.Contains(c.Detail, fmt.Sprintf("chain id %d, block", ch.ChainID())) || !strings.Contains(c.Detail, "any chain is accepted") {
		t.Errorf("dev chain: %+v", c)
	}
	if errors.Is(dialErr, chain.ErrUnreachable) {
		t.Error("unreachable")
	}
}
