package inject

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
	"golang.org/x/net/html"
)

// The forms with a request body, submitted over HTTP (qa_submit) at the
// exercise rung: each text field holds its own canary, and where a canary
// lands in the answer decides the payload tried there, as for a URL
// parameter (Reflected).

// Form submission limits.
const (
	PostFormsMax = 4 // forms submitted a run
	postFields   = 8 // fields of a form kept
	postTried    = 3 // fields per form tried with payloads
)

// FormField is one named field of a form.
type FormField struct {
	Name  string
	Type  string // the input's type, lowercased; "textarea", "select"
	Value string // its value as served ("" when none)
}

// textLike reports whether a field takes free text: a canary goes there.
func (f FormField) textLike() bool {
	switch f.Type {
	case "", "text", "search", "textarea", "tel":
		return true
	}
	return false
}

// fill is what a submission sends in a field that holds no canary: its
// value, or a valid placeholder for a typed field.
func (f FormField) fill() string {
	switch {
	case f.Value != "":
		return f.Value
	case f.Type == "email":
		return "qa@example.com"
	case f.Type == "url":
		return "https://example.com/"
	case f.Type == "number" || f.Type == "range":
		return "1"
	case f.Type == "checkbox" || f.Type == "radio":
		return "on"
	}
	return "x"
}

// PostForm is a form whose method sends a body (POST), as a page serves it.
type PostForm struct {
	Page    string // the page it is on
	Action  string // absolute URL
	Method  string // POST
	Enctype string // qa_submit's: form or multipart
	Fields  []FormField
}

// Key names the form's target: its method and action.
func (f PostForm) Key() string { return f.Method + " " + f.Action }

// PostForms returns the forms of an HTML page that send a body, each with
// its named fields (password, file and button fields left out, at most
// postFields). A form without a text field is left out: no canary fits.
func PostForms(page, body string) []PostForm {
	b, err := url.Parse(page)
	if err != nil {
		return nil
	}
	var out []PostForm
	var cur *PostForm
	for _, t := range tokenize(body) {
		switch {
		case t.Type == html.StartTagToken && t.Name == "form":
			cur = &PostForm{Page: page, Method: "GET", Enctype: "form"}
			action := ""
			for _, a := range t.Attrs {
				switch a.Key {
				case "method":
					cur.Method = strings.ToUpper(strings.TrimSpace(a.Val))
				case "action":
					action = a.Val
				case "enctype":
					if strings.EqualFold(strings.TrimSpace(a.Val), "multipart/form-data") {
						cur.Enctype = "multipart"
					}
				}
			}
			if action == "" {
				cur.Action = crawl.Resolve(b, b.Path)
			} else {
				cur.Action = crawl.Resolve(b, action)
			}
		case cur != nil && (t.Type == html.StartTagToken || t.Type == html.SelfClosingTagToken) && (t.Name == "input" || t.Name == "select" || t.Name == "textarea"):
			f := FormField{Type: t.Name}
			if t.Name == "input" {
				f.Type = ""
			}
			for _, a := range t.Attrs {
				switch a.Key {
				case "name":
					f.Name = a.Val
				case "value":
					f.Value = a.Val
				case "type":
					if t.Name == "input" {
						f.Type = strings.ToLower(strings.TrimSpace(a.Val))
					}
				}
			}
			switch f.Type {
			case "password", "file", "submit", "button", "image", "reset":
				continue
			}
			if f.Name != "" && len(cur.Fields) < postFields && !hasField(cur.Fields, f.Name) {
				cur.Fields = append(cur.Fields, f)
			}
		case cur != nil && t.Type == html.EndTagToken && t.Name == "form":
			if cur.Method == "POST" && cur.Action != "" && hasText(cur.Fields) {
				out = append(out, *cur)
			}
			cur = nil
		}
	}
	return out
}

func hasField(fs []FormField, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

func hasText(fs []FormField) bool {
	for _, f := range fs {
		if f.textLike() {
			return true
		}
	}
	return false
}

// submitArgs is the qa_submit call that sends form with values.
func (f PostForm) submitArgs(values map[string]string) map[string]any {
	fields := map[string]any{}
	for _, fl := range f.Fields {
		v, ok := values[fl.Name]
		if !ok {
			v = fl.fill()
		}
		fields[fl.Name] = v
	}
	return map[string]any{"url": f.Action, "method": f.Method, "enctype": f.Enctype, "fields": fields}
}

// Posted submits, at the exercise rung, up to PostFormsMax of forms over HTTP
// (qa_submit): first with a canary in every text field, then, for each
// field whose canary the answer shows (at most postTried a form), a
// payload fitted to each place it landed (at most refLandings), the other
// fields keeping their canaries. A payload that breaks out of its context
// is reflected cross-site scripting (CWE-79): one finding per form, high
// (medium under a policy that blocks inline script), confirmed by
// replaying its repro; an answer with HTTP 5xx is a medium finding. Every
// submission is one write of the run's budget: Posted stops one write short
// of it (writes_left) and within the call cap. It returns the keys of the
// forms it submitted.
func Posted(p *replay.Play, forms []PostForm) (submitted []string) {
	if len(forms) == 0 || !p.Can("qa_submit") {
		return nil
	}
	if !p.Exercised() {
		p.Skip("form submission sends payloads to the platform: it runs only at the exercise rung")
		return nil
	}
	left, limited := 0, false // from the first answer's writes_left
	// Each submission may create something the run deletes at its end: a
	// write and a call kept for that DELETE (the ones already owed are
	// Probe.WritesReserved, which Room counts too).
	affordable := func(n int) bool {
		return (!limited || left-n-1-p.WritesReserved() >= injWriteSpare) && p.Room(n+1) && p.Can("qa_submit")
	}
	submit := func(args map[string]any) fleet.Result {
		r := p.Call("qa_submit", args)
		if l, ok := writesLeft(r); ok {
			left, limited = l, true
		}
		return r
	}
	for _, f := range replay.First(forms, PostFormsMax) {
		host := replay.HostOf(f.Action)
		if p.HostBusy(host, nil) || !affordable(2) {
			break
		}
		markers := map[string]string{}
		for _, fl := range f.Fields {
			if fl.textLike() {
				markers[fl.Name] = tokenFor(p, "post", f.Key(), fl.Name)
			}
		}
		r := submit(f.submitArgs(markers))
		submitted = append(submitted, f.Key())
		if p.HostBusy(host, r) || !replay.Answered(r) {
			continue
		}
		if st := replay.Status(r); st >= 500 {
			p.File(fleet.SeverityMedium, replay.SurfaceOf(p.Target(), f.Action),
				fmt.Sprintf("Submitting the form %s on %s with text in every field answers HTTP %d. Expected a form to accept or refuse input with a 4xx that says why.",
					f.Key(), f.Page, st), "qa_submit", f.submitArgs(markers))
		}
		if !looksHTML(r) {
			continue
		}
		body := replay.Body(r)
		tried := 0
		for _, fl := range f.Fields {
			m, ok := markers[fl.Name]
			if !ok || tried == postTried {
				continue
			}
			ls := findLandings(body, m)
			if len(ls) == 0 {
				continue
			}
			tried++
			if postXSS(p, f, fl.Name, markers, ls, affordable, submit) {
				break // one finding per form
			}
		}
	}
	return submitted
}

// postXSS tries a payload in field for each place its canary landed and
// reports the places that broke out, as reflectXSS does for a parameter.
func postXSS(p *replay.Play, f PostForm, field string, markers map[string]string, ls []landing, affordable func(int) bool, submit func(map[string]any) fleet.Result) bool {
	type hit struct {
		l       landing
		args    map[string]any
		payload string
		token   string
		what    string
		csp     string
	}
	var hits []hit
	tried := map[string]bool{}
	for _, l := range ls {
		if len(tried) == refLandings || !affordable(1) || p.HostBusy(replay.HostOf(f.Action), nil) {
			break
		}
		if tried[l.key()] {
			continue
		}
		tried[l.key()] = true
		t := tokenFor(p, "post-xss", f.Key(), field, l.key())
		values := map[string]string{}
		for k, v := range markers {
			values[k] = v
		}
		values[field] = payloadFor(l, t)
		args := f.submitArgs(values)
		r := submit(args)
		if !replay.Answered(r) {
			continue
		}
		for _, b := range findBreakouts(replay.Body(r), t) {
			if l.expects(b) {
				hits = append(hits, hit{l: l, args: args, payload: minimalPayload(l, t, b), token: t, what: b.What, csp: replay.Headers(r)["content-security-policy"]})
				break
			}
		}
	}
	if len(hits) == 0 {
		return false
	}
	var places []string
	for _, h := range hits {
		places = append(places, fmt.Sprintf("%s (payload %s became %s)", contextPhrase(h.l), replay.Quote(h.payload, 60), h.what))
	}
	sev, csp := fleet.SeverityHigh, ""
	if BlocksInlineScript(hits[0].csp) {
		sev, csp = fleet.SeverityMedium, " A Content-Security-Policy without 'unsafe-inline' limits the impact."
	}
	summary := fmt.Sprintf("Reflected XSS (CWE-79) through the form %s on %s: its field %q is written unescaped into the page the submission answers with, in %s. Expected submitted values escaped for each context.%s",
		f.Key(), f.Page, field, strings.Join(places, "; "), csp)
	surface := replay.SurfaceOf(p.Target(), f.Action)
	h := hits[0]
	if !affordable(1) {
		p.File(fleet.SeverityMedium, surface, summary+" (Not confirmed by a replay: the write budget is spent.)", "qa_submit", h.args)
		return true
	}
	p.FileChecked(sev, surface, summary, "qa_submit", h.args, func(r fleet.Result) bool {
		for _, b := range findBreakouts(replay.Body(r), h.token) {
			if h.l.expects(b) {
				return true
			}
		}
		return false
	})
	return true
}
