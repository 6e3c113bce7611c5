package specialists

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Smoke limits.
const (
	smokeCompiles = 3 // corpus programs compiled, smallest first
	smokeNames    = 4 // public names whose faces are fetched
	smokeDocs     = 4 // docs pages fetched
)

// smoke walks the main path once — mint, compile a known-good program,
// publish it, fetch the new face, call it — and reports each step that
// should have worked and did not; then checks the public faces, the docs
// and (at exercise) a call to a public name. At observe the mint is refused
// and only the read-only steps run. A request to the target that gets no
// answer is re-tried and checked against a control before it becomes an
// outage finding (smokeNet, smoke_reach.go).
func smoke(p *replay.Play, o Options) {
	net := newSmokeNet(p, o)
	name := ""
	if p.Can("qa_create") {
		ex := p.Exchange("qa_create", map[string]any{})
		r := ex.Result
		switch {
		case replay.RefusedByDial(ex):
			p.Skip("qa_create refused (%s): mint, publish, face and call of a fresh name skipped", r.Err())
		case !r.IsOK() && (replay.Str(r, "revert_reason") != "" || strings.HasPrefix(r.Err(), "register ")):
			p.File(fleet.SeverityHigh, fleet.SurfaceRegistry,
				"Minting a fresh name failed: "+replay.Quote(r.Err(), 300)+". Expected register(name) from a funded fresh key to succeed.",
				"qa_create", map[string]any{})
		case !r.IsOK():
			p.Skip("qa_create failed outside the platform (%s): exercise steps skipped", replay.Clip(r.Err(), 160))
		default:
			name = replay.Str(r, "name")
			p.Notef("minted %s", name)
			if !replay.Flag(r, "owner_verified") {
				p.File(fleet.SeverityHigh, fleet.SurfaceRegistry,
					"After registering a fresh name, ownerOf(name) does not return the key that registered it. Expected the registrant to own the name.",
					"qa_create", map[string]any{})
			}
		}
	} else {
		p.Skip("qa_create is not among this run's tools")
	}

	good := smokeCompile(p, o.Corpus)

	if name != "" {
		smokeFreshName(p, net, name, good)
	}

	// The public, read-only surfaces.
	for _, n := range replay.First(p.Target().Names, smokeNames) {
		if !p.Can("qa_fetch") || !p.Room(1) {
			break
		}
		url := p.Target().FaceURL(n)
		r := p.Fetch(url)
		smokeHTTP(p, net, r, url, fleet.SurfaceFace, fleet.SeverityHigh, fmt.Sprintf("the face of public name %q", n))
	}
	for _, d := range replay.First(p.Target().Docs, smokeDocs) {
		if !p.Can("qa_fetch") || !p.Room(1) {
			break
		}
		r := p.Fetch(d)
		smokeHTTP(p, net, r, d, fleet.SurfaceDocs, fleet.SeverityMedium, "the docs page")
	}
	if !p.Has("qa_fetch") {
		p.Skip("qa_fetch is not among this run's tools: faces and docs not checked")
	}

	// A call to a public name, when calls are allowed.
	if len(p.Target().Names) > 0 && p.Can("qa_call") && p.Room(1) {
		a := replay.CallArgs{Target: p.Target().Names[0], Message: "ping"}
		ex := p.Exchange("qa_call", a)
		if replay.RefusedByDial(ex) {
			p.Skip("qa_call refused (%s)", ex.Result.Err())
		} else if r, ev, ok := net.confirmCall(a, ex.Result); !ok {
			p.Skip("qa_call re-try refused: the call's outage not confirmed")
		} else if broken, why := brokenCall(r); broken {
			p.File(fleet.SeverityHigh, fleet.SurfaceCall,
				fmt.Sprintf("Calling public name %q with %q %s.%s Expected a 2xx JSON reply.", a.Target, a.Message, why, sentence(ev)),
				"qa_call", a)
		}
	}
}

// smokeCompile compiles the smallest corpus programs and reports each that
// the compiler does not accept. It returns the first that compiled.
func smokeCompile(p *replay.Play, corpus []string) string {
	if len(corpus) == 0 {
		p.Skip("no known-good corpus (target.corpus): compile and publish skipped")
		return ""
	}
	if !p.Can("qa_compile") {
		p.Skip("qa_compile unavailable: compile skipped")
		return ""
	}
	good := ""
	for _, src := range replay.First(bySize(corpus), smokeCompiles) {
		if !p.Room(1) {
			break
		}
		r := p.Compile(src)
		if !r.IsOK() {
			p.Skip("qa_compile failed (%s): compile checks skipped", replay.Clip(r.Err(), 160))
			return good
		}
		if out := replay.Str(r, "outcome"); out != "compiled" {
			p.File(fleet.SeverityHigh, fleet.SurfaceCompiler,
				fmt.Sprintf("A known-good corpus program (%d bytes, starting %s) was %s by the compiler (exit %d%s); expected it to compile. stderr: %s",
					len(src), replay.Quote(firstLine(src), 60), out, replay.Int(r, "exit_code"), replay.SignalText(r), replay.Quote(replay.Str(r, "stderr_tail"), 300)),
				"qa_compile", map[string]any{"source": src})
			continue
		}
		if good == "" {
			good = src
		}
	}
	return good
}

// smokeFreshName publishes a known-good program to a name this run minted,
// fetches its face and calls it. The name is released when the run ends, so
// these findings describe the steps instead of giving a repro.
func smokeFreshName(p *replay.Play, net *smokeNet, name, good string) {
	const fresh = "a name freshly minted with qa_create"
	if good == "" {
		p.Skip("no compiled known-good program: publish skipped")
	} else if p.Can("qa_publish") && p.Room(1) {
		ex := p.Exchange("qa_publish", map[string]any{"name": name, "source": good})
		r := ex.Result
		switch {
		case replay.RefusedByDial(ex):
			p.Skip("qa_publish refused (%s)", r.Err())
		case !r.IsOK():
			why := r.Err()
			if rr := replay.Str(r, "revert_reason"); rr != "" {
				why += " (revert: " + rr + ")"
			}
			p.File(fleet.SeverityHigh, fleet.SurfaceRegistry,
				fmt.Sprintf("Publishing a known-good program (%d bytes, it compiles) to %s failed: %s. Expected setMetadata by the name's owner to succeed. Steps: qa_create, then qa_publish that program to the new name.",
					len(good), fresh, replay.Quote(why, 300)), "", nil)
		default:
			p.Notef("published %d bytes to %s", replay.Int(r, "bytes"), name)
		}
	}
	if p.Can("qa_fetch") && p.Room(1) {
		url := p.Target().FaceURL(name)
		r := p.Fetch(url)
		ev := ""
		if noAnswer(r) {
			r, ev = net.confirm(url, r, func() fleet.Result { return p.Fetch(url) })
		}
		switch {
		case replay.NotAllowed(r):
			p.Skip("the face of %s is not fetchable (%s)", name, replay.Clip(r.Err(), 120))
		case !replay.Answered(r):
			p.File(fleet.SeverityHigh, fleet.SurfaceFace,
				fmt.Sprintf("The face of %s did not answer: %s.%s Expected a page. Steps: qa_create, qa_publish, then qa_fetch target.faces for the new name.", fresh, replay.Quote(r.Err(), 200), sentence(ev)), "", nil)
		case replay.Status(r) >= 400:
			p.File(fleet.SeverityHigh, fleet.SurfaceFace,
				fmt.Sprintf("The face of %s answers HTTP %d. Expected a 2xx page for a registered name. Steps: qa_create, qa_publish, then qa_fetch target.faces for the new name.", fresh, replay.Status(r)), "", nil)
		default:
			p.Notef("fresh face HTTP %d", replay.Status(r))
		}
	}
	if p.Can("qa_call") && p.Room(1) {
		a := replay.CallArgs{Target: name, Message: "ping"}
		ex := p.Exchange("qa_call", a)
		if replay.RefusedByDial(ex) {
			p.Skip("qa_call refused (%s)", ex.Result.Err())
		} else if r, ev, ok := net.confirmCall(a, ex.Result); !ok {
			p.Skip("qa_call re-try refused: the fresh call's outage not confirmed")
		} else if broken, why := brokenCall(r); broken {
			p.File(fleet.SeverityHigh, fleet.SurfaceCall,
				fmt.Sprintf("Calling %s with \"ping\" %s.%s Expected a 2xx reply. Steps: qa_create, then qa_call the new name.", fresh, why, sentence(ev)), "", nil)
		} else {
			p.Notef("fresh call: %s", replay.Str(r, "hint"))
		}
	}
}

// smokeHTTP reports a page that should answer and does not; one that got
// no answer is confirmed first (smokeNet.confirm).
func smokeHTTP(p *replay.Play, net *smokeNet, r fleet.Result, url string, surface fleet.Surface, sev fleet.Severity, what string) {
	ev := ""
	if noAnswer(r) {
		r, ev = net.confirm(url, r, func() fleet.Result { return p.Fetch(url) })
	}
	switch {
	case replay.NotAllowed(r):
		p.Skip("%s is not fetchable (%s)", url, replay.Clip(r.Err(), 120))
	case !replay.Answered(r):
		p.File(sev, surface, fmt.Sprintf("%s (%s) did not answer: %s.%s Expected a page.", capitalize(what), url, replay.Quote(r.Err(), 200), sentence(ev)),
			"qa_fetch", map[string]any{"url": url})
	case replay.Status(r) >= 400:
		p.File(sev, surface, fmt.Sprintf("%s (%s) answers HTTP %d. Expected 2xx.", capitalize(what), url, replay.Status(r)),
			"qa_fetch", map[string]any{"url": url})
	}
}

// brokenCall reports whether a qa_call result shows a broken endpoint: a
// server error, a timeout or no answer. Client errors and odd replies are
// the ux playbook's business.
func brokenCall(r fleet.Result) (bool, string) {
	switch h := replay.Str(r, "hint"); {
	case h == "server_error" || h == "server_error_with_trace":
		return true, fmt.Sprintf("answers HTTP %d (%s)", replay.Status(r), h)
	case h == "timeout":
		return true, "timed out"
	case h == "unreachable" || !r.IsOK() && replay.Status(r) == 0:
		return true, "got no answer: " + replay.Quote(r.Err(), 200)
	}
	return false, ""
}

// bySize returns the programs shortest first (stable).
func bySize(srcs []string) []string {
	out := slices.Clone(srcs)
	slices.SortStableFunc(out, func(a, b string) int { return len(a) - len(b) })
	return out
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

// sentence is s as a sentence to append after a full stop: " S." ("" for
// an empty s).
func sentence(s string) string {
	if s == "" {
		return ""
	}
	return " " + capitalize(s) + "."
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
