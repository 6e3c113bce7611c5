package specialists

import (
	"fmt"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// perfGas publishes a known-good program to a fresh name and compares the
// gas estimate with the gas used.
func perfGas(p *replay.Play, corpus []string) {
	switch {
	case !p.Has("qa_create") || !p.Has("qa_publish"):
		return
	case len(corpus) == 0:
		p.Skip("no corpus: gas check skipped")
		return
	case !p.Can("qa_create") || !p.Can("qa_publish"):
		p.Skip("qa_create not allowed: gas check skipped")
		return
	case !p.Room(2):
		p.Skip("no room left under the call cap: gas check skipped")
		return
	}
	ex := p.Exchange("qa_create", map[string]any{})
	name := replay.Str(ex.Result, "name")
	if replay.RefusedByDial(ex) || !ex.Result.IsOK() || name == "" {
		p.Skip("no fresh name for the gas check (%s)", replay.Clip(ex.Result.Err(), 120))
		return
	}
	src := bySize(corpus)[0]
	r := p.Publish(name, src)
	est, ok1 := replay.Num(r, "gas_estimated")
	used, ok2 := replay.Num(r, "gas_used")
	if !r.IsOK() || !ok1 || !ok2 || used <= 0 {
		p.Skip("publish for the gas check failed (%s)", replay.Clip(r.Err(), 120))
		return
	}
	steps := fmt.Sprintf("Steps: qa_create, then qa_publish the smallest corpus program (%d bytes) to the new name and compare gas_estimated with gas_used.", len(src))
	switch {
	case used > est:
		p.File(fleet.SeverityMedium, fleet.SurfaceRegistry,
			fmt.Sprintf("The gas estimate for publishing (setMetadata) is below the gas the transaction used: estimated %.0f, used %.0f; transactions sent with the estimate run out of gas. %s", est, used, steps), "", nil)
	case est > 2*used:
		p.File(fleet.SeverityLow, fleet.SurfaceRegistry,
			fmt.Sprintf("The gas estimate for publishing (setMetadata) is more than twice the gas used: estimated %.0f, used %.0f; users lock up more funds than needed. %s", est, used, steps), "", nil)
	default:
		p.Notef("publish gas: estimated %.0f, used %.0f", est, used)
	}
}
