package fleet

import (
	"context"
	"testing"
	"time"
)

// TestDispatchKeepsOwnLatency: a handler that waited before its request
// (request pacing) reports the request's own latency_ms; Dispatch stamps
// the whole call's only when the handler did not, and Outcome.Latency is
// always the whole call.
func TestDispatchKeepsOwnLatency(t *testing.T) {
	type noArgs struct{}
	r := NewRegistry()
	r.Add(NewTool("qa_paced", "waits, then measures", Observe, func(context.Context, noArgs) (Result, error) {
		time.Sleep(30 * time.Millisecond)
		return OK(map[string]any{"latency_ms": int64(2)}), nil
	}))
	r.Add(NewTool("qa_plain", "waits", Observe, func(context.Context, noArgs) (Result, error) {
		time.Sleep(30 * time.Millisecond)
		return OK(nil), nil
	}))
	out, err := r.Dispatch(context.Background(), fixedDial(Observe), "qa_paced", []byte(`{}`))
	if err != nil || out.Result["latency_ms"] != int64(2) || out.Latency < 30*time.Millisecond {
		t.Errorf("paced: %v %v latency %s", out.Result, err, out.Latency)
	}
	out, _ = r.Dispatch(context.Background(), fixedDial(Observe), "qa_plain", []byte(`{}`))
	if ms, _ := out.Result["latency_ms"].(int64); ms < 30 {
		t.Errorf("plain: latency_ms %v, want the whole call", out.Result["latency_ms"])
	}
}
