package specialists

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/inject"
	"github.com/qafleet/fleetd/specialists/replay"
)

// staticFormsListed bounds the POST forms a note names.
const staticFormsListed = 3

// secPostForms submits over HTTP (inject.Posted, qa_submit) the forms with
// a request body that either crawl found: in the fetched pages as served
// and in the rendered DOM. A form whose payload the browser already saw
// run (secDOMXSSForms, browserFound) is left alone; one the browser
// submitted without a finding is submitted again, since the answer's markup can
// carry a payload a policy kept from running. One form per action pattern
// (resourcePattern: every name's page holds the same form). The forms left
// unsubmitted
// (no qa_submit, not at the exercise rung, or past the limits) are named
// in a note.
func secPostForms(p *replay.Play, pages []replay.Page, browserFound map[string]bool) {
	var forms []inject.PostForm
	seen := map[string]bool{}
	add := func(page, body string) {
		for _, f := range inject.PostForms(page, body) {
			// One per action pattern: every name's page holds the same form.
			pat := f.Method + " " + resourcePattern(p.Target(), f.Action)
			if seen[pat] || browserFound[f.Key()] || !replay.AllowedURL(p.Target().FetchAllow, f.Action) {
				continue
			}
			seen[pat] = true
			forms = append(forms, f)
		}
	}
	for _, pg := range pages {
		if pg.OK() && isHTML(pg.Res) {
			add(pg.URL, replay.Body(pg.Res))
		}
	}
	for _, rp := range p.Rendered() {
		add(rp.URL, rp.R.HTML)
	}
	done := map[string]bool{}
	for k := range browserFound {
		done[k] = true
	}
	if p.CanSubmit() && p.Exercised() {
		for _, pf := range replay.First(p.PageForms(), formsMax) {
			done[pf.Form.Method+" "+pf.Form.URL] = true
		}
	}
	for _, k := range inject.Posted(p, forms) {
		done[k] = true
		for _, f := range forms {
			if f.Key() == k {
				done[f.Method+" "+resourcePattern(p.Target(), f.Action)] = true
			}
		}
	}
	var left []string
	listed := map[string]bool{}
	note := func(key, page string) {
		method, action, _ := strings.Cut(key, " ")
		if !done[key] && !done[method+" "+resourcePattern(p.Target(), action)] && !listed[key] {
			listed[key] = true
			left = append(left, key+" (on "+page+")")
		}
	}
	for _, pg := range pages {
		if !pg.OK() || !isHTML(pg.Res) {
			continue
		}
		for _, l := range replay.LinksOf(pg.URL, replay.Str(pg.Res, "content_type"), replay.Body(pg.Res)) {
			if l.Kind == "form" && l.Method != "GET" {
				note(l.Method+" "+l.URL, pg.URL)
			}
		}
	}
	for _, pf := range p.PageForms() {
		note(pf.Form.Method+" "+pf.Form.URL, pf.Page)
	}
	if len(left) == 0 {
		return
	}
	why := fmt.Sprintf("at most %d a run over HTTP, within the write budget and the call cap", inject.PostFormsMax)
	switch {
	case !p.Can("qa_submit") && !p.CanSubmit():
		why = "qa_submit is not among this run's tools and no browser submits forms in this run"
	case !p.Can("qa_submit"):
		why = "qa_submit is not among this run's tools, and the browser submits only the first forms of the pages it rendered"
	case !p.Exercised():
		why = "forms are submitted only at the exercise rung"
	}
	more := ""
	if len(left) > staticFormsListed {
		more = " and more"
	}
	p.Notef("%d form(s) with a request body found and not submitted (%s): %s%s",
		len(left), why, strings.Join(replay.First(left, staticFormsListed), "; "), more)
}

// secCallXSS sends the run's canary (runCanary) through the call endpoint
// to the first public name and reports it reflected unescaped in an HTML
// reply: reflected XSS on the call surface. It returns that name and
// whether the call endpoint took the call at this dial (the
// spoofed-identity checks run only then).
func secCallXSS(p *replay.Play) (target string, answered bool) {
	token, canary := runCanary(p)
	target = replay.FirstName(p.Target())
	if target == "" || !p.Can("qa_call") || !p.Room(1) {
		return "", false
	}
	a := replay.CallArgs{Target: target, Message: canary}
	ex := p.Exchange("qa_call", a)
	if replay.RefusedByDial(ex) {
		p.Skip("qa_call refused (%s): reflection and identity checks skipped", ex.Result.Err())
		return "", false
	}
	reflected := func(r fleet.Result) bool {
		return reflectsRaw(replay.Body(r), token) && strings.Contains(strings.ToLower(replay.Str(r, "content_type")), "html")
	}
	if reflected(ex.Result) {
		p.FileChecked(fleet.SeverityHigh, fleet.SurfaceCall,
			fmt.Sprintf("Reflected XSS: the call endpoint returns the message's markup unescaped in an HTML reply (%s). Expected escaping or a non-HTML content type.", replay.Str(ex.Result, "content_type")),
			"qa_call", a, reflected)
	}
	return target, true
}
