package specialists

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/inject"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Stored DOM-based XSS: a value the platform stores and a page's own
// script reads back and puts into the document. The class, not an
// instance: the JSON resources the rendered pages fetched (GET, from
// their scripts) whose write exists, found from the pages themselves (a
// form or a script call to the same URL) or from the resource's OPTIONS
// answer (Allow). Each string field is written with markup calling the renderer's canary hook
// with a canary and the field's name; the pages that read the resource
// are rendered again, and a field is vulnerable only when the browser
// opens a dialog with exactly that canary and name, and again after a
// second write with a fresh canary. A resource written with PUT or PATCH
// gets its values back afterwards.

// Stored DOM XSS limits.
const (
	storedResources = 3 // resources written a run
	storedFields    = 4 // fields of a resource written
	storedPages     = 2 // pages that read a resource rendered after a write
	storedSpare     = 1 // writes left unused, so a budget is reached, never crossed
)

// storedWrite is how one resource the pages read is written.
type storedWrite struct {
	read    string   // the resource's URL (the pages GET it)
	pages   []string // rendered pages whose scripts read it
	method  string   // POST, PUT or PATCH
	enctype string   // qa_submit's: json, form or multipart
	how     string   // where the write was learned, for the finding
	orig    map[string]any
	fields  []string // the fields written
	form    *inject.PostForm
}

// args is the qa_submit call writing payload(field) into every field.
func (w storedWrite) args(payload func(field string) string) map[string]any {
	if w.form != nil {
		vals := map[string]any{}
		for _, f := range w.form.Fields {
			vals[f.Name] = f.Value
			if slices.Contains(w.fields, f.Name) {
				vals[f.Name] = payload(f.Name)
			}
		}
		return map[string]any{"url": w.form.Action, "method": w.method, "enctype": w.enctype, "fields": vals}
	}
	obj := map[string]any{}
	if w.method == "PUT" {
		for k, v := range w.orig {
			obj[k] = v
		}
	}
	for _, f := range w.fields {
		obj[f] = payload(f)
	}
	return map[string]any{"url": w.read, "method": w.method, "enctype": "json", "json": string(replay.Marshal(obj))}
}

// identityKeys are fields a write must not change: they name or address
// the resource, so a payload there would move it, not test it.
var identityKeys = []string{"id", "uuid", "name", "slug", "key", "handle", "email", "href", "url", "link", "path", "type", "kind"}

// writableFields are the string fields of a JSON resource worth a canary:
// not identity, not a URL, at most storedFields, sorted.
func writableFields(obj map[string]any) []string {
	var out []string
	for k, v := range obj {
		s, ok := v.(string)
		lk := strings.ToLower(k)
		if !ok || slices.Contains(identityKeys, lk) || strings.HasSuffix(lk, "_id") || strings.HasSuffix(k, "Id") ||
			strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "/") {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return replay.First(out, storedFields)
}

// storedReads lists the resources the rendered pages' scripts read with a
// GET that answered 2xx, each with the pages that read it, in order seen.
func storedReads(p *replay.Play) ([]string, map[string][]string) {
	var order []string
	pages := map[string][]string{}
	for _, rp := range p.Rendered() {
		for _, rq := range rp.R.Requests {
			if !rq.IsAPI() || rq.Method != "GET" || rq.Blocked || rq.Status < 200 || rq.Status > 299 {
				continue
			}
			u := replay.StripFragment(rq.URL)
			if !replay.AllowedURL(p.Target().FetchAllow, u) {
				continue
			}
			if _, ok := pages[u]; !ok {
				order = append(order, u)
			}
			if !slices.Contains(pages[u], rp.URL) {
				pages[u] = append(pages[u], rp.URL)
			}
		}
	}
	return order, pages
}

// crawledJSON is the JSON object the crawl fetched at u (for a list, its
// first element), nil when none.
func crawledJSON(p *replay.Play, u string) map[string]any {
	for _, pg := range p.Crawl() {
		if pg.URL != u || !pg.OK() {
			continue
		}
		var v any
		if json.Unmarshal([]byte(replay.Body(pg.Res)), &v) != nil {
			return nil
		}
		switch x := v.(type) {
		case map[string]any:
			return x
		case []any:
			if len(x) > 0 {
				o, _ := x[0].(map[string]any)
				return o
			}
		}
		return nil
	}
	return nil
}

// storedWriteFor finds how the resource at read is written: a form of a
// rendered page whose action is the resource, a write a page's script
// made to it, or the methods its OPTIONS answer allows. ok is false when
// none is found.
func storedWriteFor(p *replay.Play, read string, pages []string) (storedWrite, bool) {
	w := storedWrite{read: read, pages: pages}
	for _, rp := range p.Rendered() {
		for _, f := range inject.PostForms(rp.URL, rp.R.HTML) {
			if f.Action != read {
				continue
			}
			for _, fl := range f.Fields {
				if fl.Type == "" || fl.Type == "text" || fl.Type == "textarea" || fl.Type == "search" {
					w.fields = append(w.fields, fl.Name)
				}
			}
			w.fields = replay.First(w.fields, storedFields)
			w.method, w.enctype, w.how, w.form = f.Method, f.Enctype, "the form on "+rp.URL, &f
			return w, len(w.fields) > 0
		}
	}
	w.orig = crawledJSON(p, read)
	if w.orig == nil {
		return w, false
	}
	w.fields, w.enctype = writableFields(w.orig), "json"
	if len(w.fields) == 0 {
		return w, false
	}
	for _, l := range p.Forms() {
		if l.URL == read && (l.Method == "PUT" || l.Method == "PATCH" || l.Method == "POST") && l.Kind != "form" {
			w.method, w.how = l.Method, "the page's own "+l.Kind+" call"
			return w, true
		}
	}
	if !p.Can("qa_fetch") || !p.Room(1) {
		return w, false
	}
	r := p.Call("qa_fetch", map[string]any{"url": read, "method": "OPTIONS"})
	allow := strings.ToUpper(replay.Headers(r)["allow"])
	for _, m := range []string{"PATCH", "PUT"} {
		if slices.Contains(strings.FieldsFunc(allow, func(c rune) bool { return c == ',' || c == ' ' }), m) {
			w.method, w.how = m, "its OPTIONS answer (Allow: "+replay.Clip(allow, 60)+")"
			return w, true
		}
	}
	return w, false
}

// storedFragment is the page with a fragment naming the round: a render
// of its own (renders are kept by URL), sent to no server.
func storedFragment(page, token string) string {
	return replay.StripFragment(page) + "#" + url.PathEscape("qa-"+token)
}

// secStoredDOM writes canaries into the stored fields the rendered pages
// read back and renders those pages again: see the top of this file. At
// the exercise rung only, through qa_submit (one write each, one short of
// the write budget) and the render budget.
func secStoredDOM(p *replay.Play) {
	if !p.Rendering() || !p.Can("qa_submit") {
		return
	}
	reads, pages := storedReads(p)
	if len(reads) == 0 {
		return
	}
	if !p.Exercised() {
		p.Skip("stored DOM XSS probes write to the platform: they run only at the exercise rung")
		return
	}
	left, limited := 0, false
	// Every canary write keeps one more write and two calls for its undo:
	// the restoring PUT or PATCH and its read back, or the DELETE of what a
	// POST created (those already owed are Probe.WritesReserved).
	affordable := func(n int) bool {
		return (!limited || left-n-1-p.WritesReserved() >= storedSpare) && p.Room(n+2) && p.Can("qa_submit")
	}
	write := func(args map[string]any) bool {
		r := p.Call("qa_submit", args)
		if _, ok := r["writes_left"]; ok {
			left, limited = replay.Int(r, "writes_left"), true
		}
		if !replay.Answered(r) || replay.Status(r) >= 300 {
			p.Notef("stored DOM XSS: writing %s %s was refused (%s)", args["method"], args["url"], orStatus(r))
			return false
		}
		return true
	}
	// render opens the pages that read w after a write and returns the
	// fields whose canary ran, and the page it ran on.
	render := func(w storedWrite, token string) (map[string]string, bool) {
		ran := map[string]string{}
		seen := false
		for _, pg := range replay.First(w.pages, storedPages) {
			r, ok := p.Render(storedFragment(pg, token))
			if !ok {
				continue
			}
			seen = true
			for _, d := range r.Dialogs {
				if f, ok := strings.CutPrefix(d, token+"-"); ok && slices.Contains(w.fields, f) && ran[f] == "" {
					ran[f] = pg
				}
			}
		}
		return ran, seen
	}
	written := 0
	done := map[string]bool{}
	for _, read := range reads {
		if written == storedResources || !affordable(1) {
			break
		}
		// One probe per resource pattern: the pages of every name read
		// their own instance through the same script.
		pat := resourcePattern(p.Target(), read)
		if done[pat] {
			continue
		}
		done[pat] = true // writable or not, the other instances are alike
		w, ok := storedWriteFor(p, read, pages[read])
		if !ok {
			continue
		}
		written++
		canary := domCanary(p, read, w.method, "stored1")
		payload := func(c string) func(string) string {
			return func(f string) string { return strings.ReplaceAll(formText(c), "{field}", f) }
		}
		if !write(w.args(payload(canary))) {
			continue
		}
		ran, rendered := render(w, canary)
		if !rendered {
			p.Notef("stored DOM XSS: no render left to read back %s", read)
		}
		if len(ran) > 0 && affordable(1) {
			fresh := domCanary(p, read, w.method, "stored2")
			again := map[string]string{}
			if write(w.args(payload(fresh))) {
				again, _ = render(w, fresh)
			}
			for _, f := range w.fields {
				pg, first := ran[f]
				if !first {
					continue
				}
				if again[f] == "" {
					p.Notef("a stored DOM XSS canary in field %s of %s ran once and not after a second write", f, read)
					continue
				}
				p.File(fleet.SeverityHigh, surfaceDOM,
					fmt.Sprintf("Stored DOM-based XSS (CWE-79): the field %q of %s, written with %s %s (learned from %s), reaches a script-executing sink when %s renders it in a browser: markup written there ran (its handler called fleetd's renderer hook with %s-%s), and again after a second write with a fresh canary (%s-%s). Anyone who can write the field runs script in the browser of everyone who opens the page. Expected stored values put into the page as text (textContent), never as HTML. The canaries are undone when the run ends (restored or deleted), or listed as left on the platform in the run record.",
						f, read, w.method, w.enctype, w.how, pg, canary, f, fresh, f), "", nil)
			}
		}
		// Undo: a PUT or PATCH gets the previous values back (with the
		// write kept for it); what a POST created is deleted when the run
		// ends (Probe.UndoWrites), or listed as left.
		// The previous values are read back to be sure (RestoreFields): a
		// platform may answer the restore and keep the canary.
		if (w.method == "PUT" || w.method == "PATCH") && w.form == nil {
			before := map[string]json.RawMessage{}
			for k, v := range w.orig {
				before[k] = replay.Marshal(v)
			}
			p.RestoreFields(replay.Restore{URL: read, Shown: read, Whose: "a resource the pages read", Method: w.method, Before: before, Fields: w.fields}, nil)
		}
	}
}

// secStoredDOMName is the stored DOM XSS probe for a chain platform: the
// fresh name inject.Stored minted (own, owned by the run's throwaway key)
// gets the markup canary in each metadata field it wrote (qa_publish), and
// its face is rendered. A field is DOM-based XSS only when the browser
// runs the canary while the face as served (qa_fetch) does not hold the
// markup: markup the server itself writes is inject.Stored's finding.
// Confirmed by a second write with a fresh canary; the name is released
// when the run ends.
func secStoredDOMName(p *replay.Play, own string, fields []string) {
	if !p.Rendering() || own == "" || len(fields) == 0 || !p.Can("qa_publish") || !p.Exercised() {
		return
	}
	face := p.Target().FaceURL(own)
	if face == "" {
		return
	}
	left, limited := 0, false
	affordable := func(n int) bool {
		return (!limited || left-n >= storedSpare) && p.Room(n) && p.Can("qa_publish")
	}
	publish := func(token string, fs []string) []string {
		var ok []string
		for _, f := range fs {
			if !affordable(1) {
				break
			}
			r := p.Call("qa_publish", map[string]any{"name": own, "key": f, "text": strings.ReplaceAll(formText(token), "{field}", f)})
			if _, has := r["writes_left"]; has {
				left, limited = replay.Int(r, "writes_left"), true
			}
			if r.IsOK() {
				ok = append(ok, f)
			}
		}
		return ok
	}
	ranIn := func(token string, fs []string) []string {
		r, ok := p.Render(storedFragment(face, token))
		if !ok {
			return nil
		}
		var ran []string
		for _, f := range fs {
			if slices.Contains(r.Dialogs, token+"-"+f) {
				ran = append(ran, f)
			}
		}
		return ran
	}
	canary := domCanary(p, face, "metadata", "stored1")
	ran := ranIn(canary, publish(canary, replay.First(fields, storedFields)))
	if len(ran) == 0 || !p.Can("qa_fetch") || !p.Room(1) {
		return
	}
	served := replay.Body(p.Call("qa_fetch", map[string]any{"url": face}))
	var dom []string
	for _, f := range ran {
		if strings.Contains(served, crawl.CanaryCall(canary+"-"+f)+">") {
			p.Notef("stored DOM XSS: the canary in field %s of %s ran, but the face as served holds it (stored XSS the server writes)", f, own)
			continue
		}
		dom = append(dom, f)
	}
	if len(dom) == 0 {
		return
	}
	fresh := domCanary(p, face, "metadata", "stored2")
	again := ranIn(fresh, publish(fresh, dom))
	for _, f := range dom {
		if !slices.Contains(again, f) {
			p.Notef("a stored DOM XSS canary in field %s of %s ran once and not after a second write", f, own)
			continue
		}
		p.File(fleet.SeverityHigh, surfaceDOM,
			fmt.Sprintf("Stored DOM-based XSS (CWE-79): the metadata field %q of a name, written by its owner (qa_publish on a fresh name), reaches a script-executing sink when its face %s renders it in a browser: markup written there ran (its handler called fleetd's renderer hook with CANARY-%s) though the face as served does not hold it, and again after a second write with a fresh canary. Any name's owner runs script in the browser of everyone who opens the face. Expected metadata put into the page as text (textContent), never as HTML.",
				f, strings.ReplaceAll(p.Target().Faces, "{name}", "NAME"), f), "", nil)
	}
}

// resourcePattern is u with the path segments that name an instance (a
// name of the target, a number, a long hex or UUID-like id) as "*".
func resourcePattern(t fleet.Target, u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	segs := strings.Split(pu.EscapedPath(), "/")
	for i, sg := range segs {
		if slices.Contains(t.Names, sg) || instanceID.MatchString(sg) {
			segs[i] = "*"
		}
	}
	return pu.Scheme + "://" + pu.Host + strings.Join(segs, "/")
}

var instanceID = regexp.MustCompile(`^(?:[0-9]+|[0-9a-fA-F]{12,}|[0-9a-fA-F]{8}-[0-9a-fA-F-]{27})$`)

// orStatus says what an answer was, for a note.
func orStatus(r fleet.Result) string {
	if replay.Answered(r) {
		return fmt.Sprintf("HTTP %d", replay.Status(r))
	}
	return replay.Clip(r.Err(), 100)
}
