package chain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// TraceTracers are the tracers ReadRPC lets debug_traceCall use: geth's
// native ones, whose output is bounded by the call's own size. The default
// struct logger (an entry per opcode) and JavaScript tracers (code run on
// the node) are refused.
var TraceTracers = []string{"prestateTracer", "callTracer", "4byteTracer"}

// maxSimulateCalls bounds the calls of one eth_simulateV1 request.
const maxSimulateCalls = 64

// checkReadParams refuses the parameters of an allowlisted method that
// would make the node do more than a bounded read: debug_traceCall without
// one of TraceTracers, eth_simulateV1 over more than maxSimulateCalls
// calls. The refusal wraps ErrRefused.
func checkReadParams(method string, params json.RawMessage) error {
	switch method {
	case "debug_traceCall":
		var p []json.RawMessage
		_ = json.Unmarshal(params, &p)
		var cfg struct {
			Tracer string `json:"tracer"`
		}
		if len(p) < 3 || json.Unmarshal(p[2], &cfg) != nil || !slices.Contains(TraceTracers, cfg.Tracer) {
			return &RefusedError{Rule: "read-only", Reason: fmt.Sprintf("method %q is not a read-only method without a native tracer: want params [call, block, {\"tracer\": one of %s}]",
				method, strings.Join(TraceTracers, ", "))}
		}
	case "eth_simulateV1":
		var p []json.RawMessage
		var opts struct {
			BlockStateCalls []struct {
				Calls []json.RawMessage `json:"calls"`
			} `json:"blockStateCalls"`
		}
		if json.Unmarshal(params, &p) != nil || len(p) == 0 || json.Unmarshal(p[0], &opts) != nil {
			return fmt.Errorf("%s: params must be [{\"blockStateCalls\": [...]}, block]", method)
		}
		n := 0
		for _, b := range opts.BlockStateCalls {
			n += len(b.Calls)
		}
		if n > maxSimulateCalls {
			return &RefusedError{Rule: "read-only", Reason: fmt.Sprintf("eth_simulateV1 with %d calls: at most %d", n, maxSimulateCalls)}
		}
	}
	return nil
}
