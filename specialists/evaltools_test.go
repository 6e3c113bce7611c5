package specialists

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
)

// httpTools are the tools of the evaluations on platforms without a chain
// (webapp, spa, tricks): qa_fetch and qa_call over the platform's HTTP
// (fetchClient, callClient), qa_report collecting the findings, the rest
// "not configured".
func httpTools(tg fleet.Target, fetchClient, callClient *http.Client) func(string, *[]map[string]any) *fleet.Registry {
	return func(runID string, findings *[]map[string]any) *fleet.Registry {
		reg := fleet.NewRegistry()
		add := func(name string, rung fleet.Dial, fn func(a map[string]any) fleet.Result) {
			tool, _ := fleettest.Tool(name, rung, func(ctx context.Context, raw json.RawMessage) (fleet.Result, error) {
				var a map[string]any
				if err := json.Unmarshal(raw, &a); err != nil {
					return fleet.Fail("bad args: %v", err), nil
				}
				return fn(a), nil
			})
			reg.Add(tool)
		}
		notConfigured := func(what string) func(map[string]any) fleet.Result {
			return func(map[string]any) fleet.Result { return fleet.Fail("%s is not configured", what) }
		}
		add("qa_fetch", fleet.Observe, fetchTool(tg.FetchAllow, fetchClient))
		add("qa_call", fleet.Exercise, callTool(tg.Call, callClient))
		add("qa_compile", fleet.Observe, notConfigured("target.compiler"))
		add("qa_chain", fleet.Observe, notConfigured("chain"))
		add("qa_create", fleet.Exercise, notConfigured("qa_create needs target.registry and chain.sponsor_key_file: chain"))
		add("qa_publish", fleet.Exercise, notConfigured("chain"))
		add("qa_report", fleet.Observe, func(a map[string]any) fleet.Result {
			*findings = append(*findings, a)
			return fleet.OK(map[string]any{"status": "posted"})
		})
		return reg
	}
}
