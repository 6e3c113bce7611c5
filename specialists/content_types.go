package specialists

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// contentTypes reports answers whose Content-Type contradicts them: a
// declared JSON body that does not parse, a JSON document served as HTML,
// a script served as HTML (an app shell answering for a missing file), a
// body without any Content-Type. One finding per host and kind of mismatch.
func (u *uxRun) contentTypes(pages []replay.Page) {
	seen := map[string]bool{}
	for _, pg := range pages {
		if !pg.OK() || replay.Flag(pg.Res, "truncated") || strings.TrimSpace(replay.Body(pg.Res)) == "" || replay.Str(pg.Res, "method") == "HEAD" || u.dead[pg.URL] {
			continue
		}
		why := typeMismatch(pg)
		if why == "" {
			continue
		}
		key := replay.HostOf(pg.URL) + "\x00" + why
		if seen[key] {
			continue
		}
		seen[key] = true
		if u.types == uxTypeFindings {
			u.p.Notef("more content-type mismatches not reported (%s)", pg.URL)
			continue
		}
		u.types++
		u.p.File(fleet.SeverityLow, "content-type",
			fmt.Sprintf("%s is %s. Expected the Content-Type to describe the body, so clients and browsers treat it right.", replay.DescribePage(pg), why),
			"qa_fetch", map[string]any{"url": pg.URL})
	}
}

// typeMismatch describes how a page's Content-Type contradicts its body,
// "" if it does not.
func typeMismatch(pg replay.Page) string {
	ct := strings.ToLower(replay.Str(pg.Res, "content_type"))
	if ct == "" {
		ct = strings.ToLower(replay.Headers(pg.Res)["content-type"])
	}
	b := replay.Body(pg.Res)
	switch {
	case ct == "":
		return "served without a Content-Type"
	case strings.Contains(ct, "json") && !json.Valid([]byte(b)):
		return fmt.Sprintf("declared %s but its body is not JSON (starts %s)", replay.Clip(ct, 60), replay.Quote(b, 40))
	case strings.Contains(ct, "html") && looksJSONDoc(b):
		return fmt.Sprintf("a JSON document served as %s", replay.Clip(ct, 60))
	case pg.Kind == "script" && strings.Contains(ct, "html"):
		return fmt.Sprintf("loaded as a script but served as %s (starts %s)", replay.Clip(ct, 60), replay.Quote(b, 40))
	}
	return ""
}

// looksJSONDoc reports whether b is a JSON object or array.
func looksJSONDoc(b string) bool {
	t := strings.TrimSpace(b)
	return (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t))
}
