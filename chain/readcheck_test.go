package chain

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestReadRPCSimulations: the simulations pass with a native tracer and a
// bounded call count; the struct logger, JavaScript tracers and oversized
// simulations are refused before anything is sent.
func TestReadRPCSimulations(t *testing.T) {
	b := mustDevchain(t)
	c := mustDial(t, b.url)
	ctx := context.Background()
	reg, _, err := c.DeployNameRegistry(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	to := reg.Address().String()
	stranger := "0x00000000000000000000000000000000000a11ce"
	data, _ := ZeroCalldata("adminResetAll()")
	call := `{"from":"` + stranger + `","to":"` + to + `","data":"0x` + hexOf(data) + `"}`

	out, err := c.ReadRPC(ctx, "debug_traceCall", json.RawMessage(`[`+call+`,"latest",{"tracer":"prestateTracer","tracerConfig":{"diffMode":true}}]`))
	if err != nil || !strings.Contains(string(out), `"post"`) {
		t.Errorf("debug_traceCall prestate diff: %s, %v", out, err)
	}
	out, err = c.ReadRPC(ctx, "eth_simulateV1", json.RawMessage(`[{"blockStateCalls":[{"calls":[`+call+`]}]},"latest"]`))
	if err != nil || !strings.Contains(string(out), `"status":"0x0"`) {
		t.Errorf("eth_simulateV1 of an admin call from a stranger: %s, %v (want a failed call)", out, err)
	}
	many := strings.Repeat(call+",", maxSimulateCalls) + call
	for _, bad := range []struct{ method, params string }{
		{"debug_traceCall", `[` + call + `,"latest"]`},
		{"debug_traceCall", `[` + call + `,"latest",{"tracer":"{result: function() { return 1 }}"}]`},
		{"eth_simulateV1", `[{"blockStateCalls":[{"calls":[` + many + `]}]},"latest"]`},
	} {
		if _, err := c.ReadRPC(ctx, bad.method, json.RawMessage(bad.params)); !errors.Is(err, ErrRefused) {
			t.Errorf("ReadRPC %s %.80s: %v, want ErrRefused", bad.method, bad.params, err)
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
