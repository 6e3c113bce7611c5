package specialists

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// ErrOwnNetwork is the error a smoke run ends with (harness_error, in the
// run record's footer) when the target did not answer and neither did the
// control: fleetd's own network (its host offline, DNS or a proxy down)
// cannot be told from an outage, so no outage finding is posted.
var ErrOwnNetwork = errors.New("fleetd's own network")

// DefaultRetryDelay is how long smoke waits before re-trying a target
// request that got no answer (Options.RetryDelay).
const DefaultRetryDelay = 2 * time.Second

// controlCall is the control check: a read of the chain node fleetd uses
// anyway, independent of the target and harmless at every dial.
var controlCall = map[string]any{"method": "eth_blockNumber", "params": []any{}}

// smokeNet decides, for one replay of smoke, whether a target request that
// got no answer is the target's outage or fleetd's own network. Before an
// outage finding it re-tries the request once after delay; if that gets no
// answer either it checks a control once per run: the chain node
// (qa_chain eth_blockNumber) or, without one, a page of the target on
// another host. The control answering makes the finding (and says so in
// its evidence); the control not answering ends the run with ErrOwnNetwork
// and posts nothing. Everything it does is a read.
type smokeNet struct {
	p     *replay.Play
	delay time.Duration
	// checked: the control was checked; control is the evidence that it
	// answered, "" when no control could be checked.
	checked bool
	control string
	down    []string // hosts that did not answer a re-try while the control answered
}

func newSmokeNet(p *replay.Play, o Options) *smokeNet {
	d := o.RetryDelay
	if d <= 0 {
		d = DefaultRetryDelay
	}
	return &smokeNet{p: p, delay: d}
}

// noAnswer reports whether a qa_fetch or qa_call result got no answer at
// all (the tools' network hints): refused, reset, unresolvable, timed out.
func noAnswer(r fleet.Result) bool {
	h := replay.Str(r, "hint")
	return !r.IsOK() && (h == "unreachable" || h == "timeout")
}

// confirm is called with a request to the target (to url) whose result
// first got no answer; again makes the same request. It returns the result
// to judge and, when that still got no answer, the evidence for the
// finding: the re-try and the control. When the control does not answer
// either it stops the run (ErrOwnNetwork) and does not return.
func (n *smokeNet) confirm(target string, first fleet.Result, again func() fleet.Result) (fleet.Result, string) {
	host := hostOf(target)
	if slices.Contains(n.down, host) {
		return first, fmt.Sprintf("Another request to %s this run got no answer, nor when re-tried; %s", host, n.control)
	}
	n.p.Wait(n.delay)
	r := again()
	if !noAnswer(r) {
		if r.IsOK() || replay.Status(r) > 0 {
			n.p.Notef("%s did not answer at first and answered when re-tried after %s", target, n.delay)
		}
		return r, ""
	}
	why := fmt.Sprintf("Re-tried after %s: no answer either (%s)", n.delay, replay.Quote(r.Err(), 160))
	if !n.checked {
		n.checked = true
		n.control = n.checkControl(target, first, r)
	}
	if n.control == "" {
		return r, why + "; no control could be checked (qa_chain unavailable and no page of the target on another host), so fleetd's own network was not ruled out"
	}
	n.down = append(n.down, host)
	return r, why + "; " + n.control
}

// confirmCall is confirm for a qa_call of a that got first: the re-try is
// the same call to the target's call endpoint. ok is false when the re-try
// was refused (the dial went down mid-run): nothing is confirmed then.
func (n *smokeNet) confirmCall(a replay.CallArgs, first fleet.Result) (r fleet.Result, evidence string, ok bool) {
	if !noAnswer(first) {
		return first, "", true
	}
	refused := false
	r, evidence = n.confirm(n.p.Target().Call, first, func() fleet.Result {
		ex := n.p.Exchange("qa_call", a)
		refused = replay.RefusedByDial(ex)
		return ex.Result
	})
	return r, evidence, !refused
}

// checkControl checks the control once: the chain node and, when it is
// unavailable or does not answer, a page of the target on another host
// than target's. It returns the evidence that a control answered, "" when
// none could be checked, and stops the run when every control it could
// check did not answer.
func (n *smokeNet) checkControl(target string, first, retry fleet.Result) string {
	p := n.p
	lost := fmt.Sprintf("%s did not answer (%s), nor when re-tried after %s (%s)",
		target, replay.Clip(first.Err(), 200), n.delay, replay.Clip(retry.Err(), 200))
	var silent []string // the controls that did not answer, for the run's error
	if p.Can("qa_chain") {
		ex := p.Exchange("qa_chain", controlCall)
		r := ex.Result
		switch {
		case replay.RefusedByDial(ex):
		case r.IsOK():
			return "the control, the chain node fleetd uses (qa_chain eth_blockNumber), answered in the same run, so fleetd's own network was up"
		case noAnswer(r):
			silent = append(silent, fmt.Sprintf("the chain node (%s)", replay.Clip(r.Err(), 300)))
		}
	}
	// A page of the target on another host: the control without a node,
	// and the second opinion when the node did not answer (it may be the
	// node that is down, not fleetd's network).
	for _, u := range n.otherHost(target) {
		if !p.Can("qa_fetch") {
			break
		}
		r := p.Fetch(u)
		switch {
		case noAnswer(r):
			silent = append(silent, fmt.Sprintf("%s on another host of the target (%s)", u, replay.Clip(r.Err(), 200)))
		case replay.Answered(r):
			ev := fmt.Sprintf("the control, %s on another host of the target, answered in the same run (HTTP %d), so fleetd's own network was up", u, replay.Status(r))
			if len(silent) > 0 {
				ev = "the chain node did not answer, but " + ev
			}
			return ev
		}
	}
	if len(silent) > 0 {
		p.Stop(fmt.Errorf("playbook smoke: %w: the control, %s, did not answer either; no outage finding posted. The target: %s",
			ErrOwnNetwork, strings.Join(silent, ", and "), lost))
	}
	return ""
}

// otherHost returns the target's pages (docs, the first name's face, the
// call endpoint's origin) on hosts other than target's, at most two.
func (n *smokeNet) otherHost(target string) []string {
	t := n.p.Target()
	host := hostOf(target)
	var cands []string
	cands = append(cands, t.Docs...)
	if len(t.Names) > 0 {
		cands = append(cands, t.FaceURL(t.Names[0]))
	}
	if u, err := url.Parse(t.Call); err == nil && u.Host != "" {
		cands = append(cands, u.Scheme+"://"+u.Host+"/")
	}
	var out []string
	for _, c := range cands {
		if h := hostOf(c); h != "" && h != host && !slices.Contains(out, c) {
			out = append(out, c)
			if len(out) == 2 {
				break
			}
		}
	}
	return out
}

// hostOf is the host:port of a URL, "" when it has none.
func hostOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Host
}
