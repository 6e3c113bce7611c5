package qatools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestChainReadSaysWhenTheNodeGaveNoAnswer checks qa_chain's hint: a node
// that does not answer gives hint "unreachable" (as qa_fetch does for the
// target), an error the node answered with gives none, so a planner can
// tell fleetd's own network from a bad request (the smoke playbook's
// control check).
func TestChainReadSaysWhenTheNodeGaveNoAnswer(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	_, reg := h.newRun("r-chain-hint", fleet.Budget{})
	out, _ := h.call(reg, "qa_chain", map[string]any{"method": "eth_blockNumber", "params": []any{}})
	if out.Verdict != fleet.VerdictOK || out.Result["result"] == nil || out.Result["hint"] != nil {
		t.Errorf("eth_blockNumber on a live node: %v", out.Result)
	}
	out, _ = h.call(reg, "qa_chain", map[string]any{"method": "eth_getBalance", "params": []any{"0xnothex", "latest"}})
	if out.Result.IsOK() || out.Result["hint"] != nil {
		t.Errorf("a JSON-RPC error from a live node: %v, want a failure without a hint", out.Result)
	}

	// A node that stopped answering: nothing listens on port 1.
	down, err := chain.Dial(context.Background(), "http://127.0.0.1:1", chain.Options{Lazy: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	h.env.Chain = down
	out, _ = h.call(reg, "qa_chain", map[string]any{"method": "eth_blockNumber", "params": []any{}})
	if out.Result.IsOK() || out.Result["hint"] != "unreachable" || !strings.Contains(out.Result.Err(), "127.0.0.1:1") {
		t.Errorf("eth_blockNumber on a node that is down: %v, want hint unreachable and the node named", out.Result)
	}
}
