package specialists

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// corsOrigin is the foreign origin the CORS probes claim. It is fixed (not
// seeded by the run) so that every run's repro, and so its fingerprint, is
// the same.
const corsOrigin = "https://qa-origin.example"

// fetchArgs are qa_fetch's arguments; empty fields are left out.
type fetchArgs struct {
	URL    string `json:"url"`
	Method string `json:"method,omitempty"`
	Origin string `json:"origin,omitempty"`
}

// fetchWith is qa_fetch with a method and an Origin header.
func fetchWith(p *replay.Play, a fetchArgs) fleet.Result { return p.Call("qa_fetch", a) }

// corsFinding is what one kind of request showed about a host's CORS
// policy.
type corsFinding struct {
	sev   fleet.Severity
	what  string    // the verdict
	how   string    // the first request that showed it
	args  fetchArgs // that request, the repro
	count int       // requests that showed it
}

// corsVerdict reads a response's CORS headers. sent is the Origin the
// request carried ("" for none). A reflected foreign origin with
// credentials lets any site read the user's authenticated responses
// (high); null with credentials lets any sandboxed frame do so (medium);
// a wildcard with credentials is refused by browsers but shows the server
// means to share credentialed responses (low). Anything else, a wildcard
// without credentials included (public data), is no finding.
func corsVerdict(r fleet.Result, sent string) (fleet.Severity, string, bool) {
	if !replay.Answered(r) {
		return "", "", false
	}
	hd := replay.Headers(r)
	acao := strings.TrimSpace(hd["access-control-allow-origin"])
	creds := strings.EqualFold(strings.TrimSpace(hd["access-control-allow-credentials"]), "true")
	if !creds || acao == "" {
		return "", "", false
	}
	switch {
	case sent != "" && sent != "null" && strings.EqualFold(acao, sent):
		return fleet.SeverityHigh, fmt.Sprintf("reflects the foreign Origin %s in Access-Control-Allow-Origin with Access-Control-Allow-Credentials: true", sent), true
	case acao == "null":
		return fleet.SeverityMedium, "answers Access-Control-Allow-Origin: null with Access-Control-Allow-Credentials: true", true
	case acao == "*":
		return fleet.SeverityLow, "answers Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true", true
	}
	return "", "", false
}

// secCORS judges each host's CORS policy from every crawled response and
// from its own probes, on the first secHosts origins: a credentialed GET of
// the index with a foreign Origin and with Origin null and, on the call
// endpoint's origin, a GET and an OPTIONS preflight of the call endpoint
// with the foreign Origin. One finding per host, at the worst verdict, with
// the request that showed it as the repro.
func secCORS(p *replay.Play, pages []replay.Page) {
	if !p.Can("qa_fetch") {
		return
	}
	var order []string
	found := map[string][]*corsFinding{} // per host, in order seen
	note := func(host string, sev fleet.Severity, what, how string, args fetchArgs) {
		if _, ok := found[host]; !ok {
			order = append(order, host)
		}
		for _, f := range found[host] {
			if f.what == what {
				f.count++
				return
			}
		}
		found[host] = append(found[host], &corsFinding{sev: sev, what: what, how: how, args: args, count: 1})
	}
	for _, pg := range pages {
		if sev, what, ok := corsVerdict(pg.Res, ""); ok {
			note(replay.HostOf(pg.URL), sev, what, "on "+pg.URL+", a request without Origin", fetchArgs{URL: pg.URL})
		}
	}
	var probes []fetchArgs
	for _, o := range replay.First(replay.TargetOrigins(p.Target()), secHosts) {
		probes = append(probes, fetchArgs{URL: o + "/", Origin: corsOrigin}, fetchArgs{URL: o + "/", Origin: "null"})
		if p.Target().Call != "" && crawl.Origin(p.Target().Call) == o && replay.AllowedURL(p.Target().FetchAllow, p.Target().Call) {
			probes = append(probes, fetchArgs{URL: p.Target().Call, Origin: corsOrigin}, fetchArgs{URL: p.Target().Call, Method: "OPTIONS", Origin: corsOrigin})
		}
	}
	for _, a := range probes {
		if !p.Room(1) || !p.Can("qa_fetch") {
			break
		}
		r := fetchWith(p, a)
		if replay.NotAllowed(r) {
			continue
		}
		if sev, what, ok := corsVerdict(r, a.Origin); ok {
			how := "a credentialed GET of " + a.URL
			if a.Method == "OPTIONS" {
				how = "an OPTIONS preflight of " + a.URL + " for a JSON POST"
			}
			note(replay.HostOf(a.URL), sev, what, how, a)
		}
	}
	for _, h := range order {
		fs := found[h]
		w := fs[0]
		for _, f := range fs[1:] {
			if f.sev.Rank() > w.sev.Rank() {
				w = f
			}
		}
		var evidence []string
		for _, f := range fs {
			e := f.what + " (" + f.how
			if f.count > 1 {
				e += fmt.Sprintf(", and %d more like it", f.count-1)
			}
			evidence = append(evidence, e+")")
		}
		sent := w.args.Origin
		impact := map[fleet.Severity]string{
			fleet.SeverityHigh:   "any site a user visits can read the answers with the user's credentials",
			fleet.SeverityMedium: "any sandboxed frame or data: page can read the answers with the user's credentials",
			fleet.SeverityLow:    "browsers refuse this pair, but it shows credentialed cross-origin reads are meant to work",
		}[w.sev]
		p.FileChecked(w.sev, "cors",
			fmt.Sprintf("CORS on %s %s (%s): %s. Expected Access-Control-Allow-Origin to name only trusted origins, never a reflected, null or wildcard origin together with credentials. Evidence: %s.",
				h, w.what, w.how, impact, strings.Join(replay.First(evidence, 4), "; ")),
			"qa_fetch", w.args,
			func(r fleet.Result) bool { sev, _, ok := corsVerdict(r, sent); return ok && sev == w.sev })
	}
}
