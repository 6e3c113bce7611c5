package replay

import (
	"encoding/json"

	"github.com/qafleet/fleetd/fleet"
)

// The active rules (injection, reflection, the agent families) send attack
// payloads: they run only once an exercise-rung call went through, and
// leave a host alone once it has asked them to slow down.

// Busy429 is how many 429 answers from a host make the active rules leave
// it alone (HostBusy).
const Busy429 = 3

// Exercised reports whether a call needing the exercise rung has gone
// through in this run: the active rules that send attack payloads (even
// through read-only tools) run only then, never at observe.
func (p *Play) Exercised() bool {
	for _, ex := range p.st.History[:p.n] {
		switch ex.Call.Tool {
		case "qa_create", "qa_publish", "qa_call":
			if ex.Verdict == fleet.VerdictOK {
				return true
			}
		}
	}
	return false
}

// HostBusy reports whether host has answered 429 Too Many Requests often
// enough in this run (to any rule, passive fetches included) that the
// active rules leave it alone. r is unused: the answer it is, is already in
// the history.
func (p *Play) HostBusy(host string, r fleet.Result) bool {
	for ; p.busyN < p.n; p.busyN++ {
		ex := p.st.History[p.busyN]
		if Status(ex.Result) != 429 {
			continue
		}
		var a struct{ URL string }
		switch ex.Call.Tool {
		case "qa_fetch":
			if json.Unmarshal(ex.Call.Args, &a) == nil {
				p.busy[HostOf(a.URL)]++
			}
		case "qa_call":
			p.busy[HostOf(p.t.Call)]++
		}
	}
	if p.busy[host] >= Busy429 {
		p.Skip("%s answered 429 Too Many Requests %d times: active probes there stopped", host, p.busy[host])
		return true
	}
	return false
}
