package specialists

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// secAdminFunctions simulates every admin function from a fresh address:
// each must revert.
func secAdminFunctions(p *replay.Play) {
	fns := p.Target().AdminFunctions
	switch {
	case len(fns) == 0:
		p.Skip("target.admin_functions not configured: admin check skipped")
		return
	case !p.Can("qa_chain"):
		p.Skip("qa_chain unavailable: admin functions not simulated")
		return
	}
	for _, sig := range replay.First(fns, secAdmin) {
		if !p.Room(1) {
			return
		}
		r := p.Chain("simulate", sig)
		if !r.IsOK() {
			p.Skip("simulate %s failed (%s)", sig, replay.Clip(r.Err(), 120))
			if strings.Contains(r.Err(), "not configured") {
				return
			}
			continue
		}
		if replay.Flag(r, "reverted") {
			continue
		}
		p.FileChecked(fleet.SeverityCritical, fleet.SurfaceRegistry,
			fmt.Sprintf("Admin function %s does not revert when called by a fresh, unprivileged address (eth_call simulation from %s succeeded): anyone can call it. Expected a revert such as an ownership check.",
				sig, replay.Str(r, "from")),
			"qa_chain", map[string]any{"method": "simulate", "params": []any{sig}},
			func(r fleet.Result) bool { return r.IsOK() && !replay.Flag(r, "reverted") })
	}
}
