package specialists

import (
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// secStoredXSS publishes the run's canary (runCanary), carried in a string
// literal of the smallest corpus program that has one, to a fresh name and
// looks for it unescaped in the name's face: stored XSS at exercise. It
// runs only when the stored-injection probes (inject.Stored, which covers
// every field of a fresh name) minted none: own is the name they used.
func secStoredXSS(p *replay.Play, corpus []string, own string) {
	token, canary := runCanary(p)
	if _, asked := p.Minted(); !p.Can("qa_create") && !asked {
		if p.Has("qa_create") {
			p.Skip("qa_create not allowed: published-canary check skipped")
		}
		return
	}
	if own != "" {
		return // the stored-injection probes covered every field of a fresh name
	}
	src := ""
	for _, s := range bySize(corpus) {
		if loc := stringLiteral.FindStringIndex(s); loc != nil {
			src = s[:loc[0]] + `"` + canary + `"` + s[loc[1]:]
			break
		}
	}
	if src == "" {
		p.Skip("no corpus program with a string literal to carry the canary: published-canary check skipped")
		return
	}
	if !p.Room(3) {
		return
	}
	name := p.FreshName()
	if name == "" || !p.Can("qa_publish") {
		p.Skip("no fresh name to publish the canary to")
		return
	}
	if r := p.Publish(name, src); !r.IsOK() {
		p.Skip("publishing the canary failed (%s)", replay.Clip(r.Err(), 120))
		return
	}
	if !p.Can("qa_fetch") {
		return
	}
	face := p.Fetch(p.Target().FaceURL(name))
	switch {
	case reflectsRaw(replay.Body(face), token):
		const stored = "Stored XSS: a canary published to a fresh name's metadata (a <script> element and an ontoggle handler inside a string literal of a known-good program) is served unescaped in the name's face. " +
			"Expected published content to be escaped or sanitized. Steps: qa_create, qa_publish a program whose string literal holds <script>self.x?.()</script><details open ontoggle=self.x?.()>, qa_fetch the name's face (target.faces)."
		// The name is released when the run ends, so the finding has no
		// repro; the replay the quality bar asks for is a second fetch now.
		if !p.Room(1) || !p.Can("qa_fetch") {
			p.File(fleet.SeverityMedium, fleet.SurfaceFace, stored+" (Not confirmed by a replay: no call left for it.)", "", nil)
		} else if reflectsRaw(replay.Body(p.Fetch(p.Target().FaceURL(name))), token) {
			p.File(fleet.SeverityHigh, fleet.SurfaceFace, stored, "", nil)
		} else {
			p.File(fleet.SeverityLow, fleet.SurfaceFace, stored+" Fetching the face again did not show it: flaky, filed at low.", "", nil, replay.StateArgs{Flaky: true})
		}
	case strings.Contains(replay.Body(face), token):
		p.Notef("the published canary is escaped in the face")
	default:
		p.Notef("the published canary does not appear in the face (HTTP %d)", replay.Status(face))
	}
}

var stringLiteral = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
