package replay

import (
	"github.com/qafleet/fleetd/fleet"
)

// FileChecked files a finding at high or critical only once its repro
// has reproduced (issue 9's quality bar): the repro call is made again and
// holds must accept the new result. A finding whose repro does not
// reproduce is filed at low with flaky=true; one that could not be replayed
// (no call left under the cap, or the tool refused) is filed at medium and
// says so. Findings below high, or without a repro or check, go straight
// to File.
func (p *Play) FileChecked(sev fleet.Severity, surface fleet.Surface, summary, reproTool string, reproArgs any, holds func(fleet.Result) bool) bool {
	if sev.Rank() < fleet.SeverityHigh.Rank() || reproTool == "" || holds == nil {
		return p.File(sev, surface, summary, reproTool, reproArgs)
	}
	if p.Filed(surface, summary, reproTool, reproArgs) {
		return true // already filed in this run: no second replay
	}
	if !p.Can(reproTool) || !p.Room(1) {
		return p.File(fleet.SeverityMedium, surface, summary+" (Not confirmed by a replay: no call left for it.)", reproTool, reproArgs)
	}
	ex := p.Exchange(reproTool, reproArgs)
	switch {
	case RefusedByDial(ex):
		return p.File(fleet.SeverityMedium, surface, summary+" (Not confirmed by a replay: "+Clip(ex.Result.Err(), 80)+".)", reproTool, reproArgs)
	case holds(ex.Result):
		return p.File(sev, surface, summary, reproTool, reproArgs)
	}
	return p.report(fleet.SeverityLow, surface, summary+" Replaying the repro did not show it again: flaky, filed at low.", reproTool, reproArgs, StateArgs{Flaky: true})
}

// Filed reports whether File would treat this finding as already
// filed in this run.
func (p *Play) Filed(surface fleet.Surface, summary, reproTool string, reproArgs any) bool {
	return p.seen[reportKey(p.st.RunID, surface, OneLine(redactSecrets(summary)), reproTool, reproArgs)]
}
