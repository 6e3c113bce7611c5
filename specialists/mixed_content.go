package specialists

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// activeMixed are link kinds whose insecure load lets a network attacker
// run code in, restyle or capture input from an HTTPS page.
var activeMixed = []string{"script", "iframe", "embed", "stylesheet", "form"}

// passiveMixed are link kinds whose insecure load only leaks or spoofs
// what is shown.
var passiveMixed = []string{"img", "media", "css"}

// secMixedContent reports, per host, HTTPS pages that load subresources or
// submit forms over plain HTTP: medium when any is active content (scripts,
// frames, stylesheets, form targets), else low.
func secMixedContent(p *replay.Play, pages []replay.Page) {
	type hostInfo struct {
		page     string
		active   bool
		examples []string
	}
	var order []string
	info := map[string]*hostInfo{}
	for _, pg := range pages {
		if !strings.HasPrefix(pg.URL, "https://") || !pg.OK() || !isHTML(pg.Res) {
			continue
		}
		for _, l := range replay.LinksOf(pg.URL, replay.Str(pg.Res, "content_type"), replay.Body(pg.Res)) {
			active := slices.Contains(activeMixed, l.Kind)
			if !strings.HasPrefix(l.URL, "http://") || !active && !slices.Contains(passiveMixed, l.Kind) {
				continue
			}
			h := replay.HostOf(pg.URL)
			hi := info[h]
			if hi == nil {
				hi = &hostInfo{page: pg.URL}
				info[h] = hi
				order = append(order, h)
			}
			if active && !hi.active {
				hi.active, hi.page = true, pg.URL
			}
			if ex := l.Kind + " " + l.URL; len(hi.examples) < 3 && !slices.Contains(hi.examples, ex) {
				hi.examples = append(hi.examples, ex)
			}
		}
	}
	for _, h := range order {
		hi := info[h]
		sev, kind := fleet.SeverityLow, "passive content (images, media)"
		if hi.active {
			sev, kind = fleet.SeverityMedium, "active content (scripts, frames, stylesheets or form targets)"
		}
		p.File(sev, "mixed-content",
			fmt.Sprintf("HTTPS pages on %s load %s over plain HTTP, which a network attacker can read or replace (seen on %s: %s). Expected every subresource and form target of an HTTPS page to use https.",
				h, kind, hi.page, strings.Join(hi.examples, ", ")),
			"qa_fetch", map[string]any{"url": hi.page})
	}
}
