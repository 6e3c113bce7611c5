package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/mcpserver"
)

// BenchmarkToolCall is one tools/call round trip through fleetd's MCP
// server: the SDK client, the transport, the session handing the call to
// its run, the loop's gate and validation, the tool, the fsync-batched run
// record, and the answer back. The tool itself does nothing, so this is
// the overhead an MCP client pays over a planner.
func BenchmarkToolCall(b *testing.B) {
	for _, transport := range []string{"stdio", "http"} {
		b.Run(transport, func(b *testing.B) {
			r := newRig(b)
			var cs *mcp.ClientSession
			if transport == "stdio" {
				cs, _ = r.stdio(context.Background(), "bench")
			} else {
				cs, _ = r.http("bench", mcpserver.HTTPOptions{})
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "qa_read", Arguments: map[string]any{"n": 1}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}
