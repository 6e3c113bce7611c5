package devchain

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// TestTraceCallPrestateDiff: debug_traceCall with the prestate tracer's
// diff mode shows the storage a simulated call would write, and writes
// nothing; with NoDebug the method is not there.
func TestTraceCallPrestateDiff(t *testing.T) {
	store := common.HexToAddress("0x5700000000000000000000000000000000000057")
	// Runtime code: SSTORE(0, 1); STOP.
	code := []byte{0x60, 0x01, 0x60, 0x00, 0x55, 0x00}
	c := mustStart(t, Config{Preload: []Preloaded{{Address: store, Code: code}}})
	ctx := testCtx(t)
	cl := mustDial(t, c)
	call := map[string]any{"from": "0x1234000000000000000000000000000000005678", "to": store.Hex(), "data": "0x"}
	var out struct {
		Post map[string]struct {
			Storage map[string]string `json:"storage"`
		} `json:"post"`
	}
	err := cl.Client().CallContext(ctx, &out, "debug_traceCall", call, "latest",
		map[string]any{"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}})
	if err != nil {
		t.Fatalf("debug_traceCall: %v", err)
	}
	var slots []string
	for a, acc := range out.Post {
		if strings.EqualFold(a, store.Hex()) {
			for k, v := range acc.Storage {
				slots = append(slots, k+"="+v)
			}
		}
	}
	want := "0x0000000000000000000000000000000000000000000000000000000000000000=0x0000000000000000000000000000000000000000000000000000000000000001"
	if !slices.Equal(slots, []string{want}) {
		raw, _ := json.Marshal(out)
		t.Errorf("post storage of the contract = %v, want [%s]; trace %s", slots, want, raw)
	}
	got, err := cl.StorageAt(ctx, store, common.Hash{}, nil)
	if err != nil || common.BytesToHash(got) != (common.Hash{}) {
		t.Errorf("the traced call wrote storage: %x, %v", got, err)
	}

	off := mustStart(t, Config{NoDebug: true})
	var ignored any
	err = mustDial(t, off).Client().CallContext(ctx, &ignored, "debug_traceCall", call, "latest", map[string]any{"tracer": "prestateTracer"})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("debug_traceCall with NoDebug: %v, want method not found", err)
	}
}
