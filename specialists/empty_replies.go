package specialists

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// replies checks replies (exercise rung): internals in the error for an
// unknown target, and empty replies from public names and a fresh one.
func (u *uxRun) replies() {
	p := u.p
	if !p.Can("qa_call") {
		p.Skip("qa_call unavailable: replies not checked")
		return
	}
	a := replay.CallArgs{Target: unknownName, Message: "hello"}
	ex, ok := u.agent(a)
	if !ok {
		return
	}
	if replay.RefusedByDial(ex) {
		p.Skip("qa_call refused (%s): replies not checked", ex.Result.Err())
		return
	}
	u.leak(replay.Body(ex.Result), fmt.Sprintf("The call endpoint's answer for an unknown target (HTTP %d)", replay.Status(ex.Result)), fleet.SurfaceCall, "qa_call", a)
	for _, n := range replay.First(p.Target().Names, uxNames) {
		a := replay.CallArgs{Target: n, Message: "hello"}
		ex, ok := u.agent(a)
		if !ok {
			return
		}
		r := ex.Result
		switch {
		case replay.Str(r, "hint") == "empty_reply":
			p.File(fleet.SeverityMedium, fleet.SurfaceCall,
				fmt.Sprintf("The agent of %q answers %q with HTTP %d and an empty reply. Expected a non-empty reply or an error that says why.", n, a.Message, replay.Status(r)),
				"qa_call", a)
		case replay.Status(r) >= 400:
			u.leak(replay.Body(r), fmt.Sprintf("The call endpoint's error for %q (HTTP %d)", n, replay.Status(r)), fleet.SurfaceCall, "qa_call", a)
		}
	}
	name := p.FreshName()
	if name == "" {
		return
	}
	ex, ok = u.agent(replay.CallArgs{Target: name, Message: "hello"})
	if !ok {
		return
	}
	r := ex.Result
	if replay.Str(r, "hint") == "empty_reply" {
		p.File(fleet.SeverityLow, fleet.SurfaceCall,
			fmt.Sprintf("The agent of a freshly minted name answers \"hello\" with HTTP %d and an empty reply. Expected a default reply or an error that says the name has no agent. Steps: qa_create, then qa_call the new name.", replay.Status(r)),
			"", nil)
	} else if strings.TrimSpace(replay.Body(r)) != "" {
		p.Notef("a fresh name's agent replies (%s)", replay.Str(r, "hint"))
	}
}
