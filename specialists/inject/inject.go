package inject

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
	"golang.org/x/crypto/sha3"
)

// Injection limits.
const (
	injFields     = 24 // metadata fields probed with canaries per run
	injLiveNames  = 6  // existing names whose stored values are checked
	injLiveReads  = 24 // metadata reads for that check
	injPages      = 6  // pages fetched per round (the face first)
	injRounds     = 3  // rounds of context payloads
	injWriteSpare = 1  // writes left unused, so a budget is reached, never crossed
)

// metadataDictionary holds field names platforms commonly give profile and
// page metadata; with the words of the docs, it names the keys seen in
// MetadataSet events (keys are keccak256 of the field name).
var metadataDictionary = []string{
	"face", "title", "name", "display_name", "displayName", "displayname", "nickname", "username", "handle",
	"headline", "tagline", "subtitle", "summary", "description", "about", "bio", "status", "motto", "mood",
	"greeting", "farewell", "signature", "quote", "note", "notes", "message", "text", "content", "body", "html",
	"markdown", "website", "homepage", "url", "link", "links", "email", "twitter", "github", "avatar",
	"avatar_url", "image", "picture", "banner", "cover", "icon", "logo", "color", "colour", "accent", "theme",
	"palette", "style", "css", "font", "background", "location", "city", "country", "lang", "locale",
	"language", "pronouns", "tags", "keywords", "category", "script", "js", "embed", "video", "audio",
	"redirect", "callback", "caption", "alt", "label", "footer", "header", "prompt", "instructions", "persona",
}

// field is one metadata field of the platform: a name (when known) and its
// key (keccak256 of the name, or only the key seen in events).
type field struct {
	Name  string   // the field name, "" when only the key is known
	Key   string   // 0x + 64 hex digits
	Docs  bool     // the docs mention the name
	Names []string // existing names that set it (from events)
}

// arg is what qa_publish and qa_chain metadata take for the field.
func (f field) arg() string {
	if f.Name != "" {
		return f.Name
	}
	return f.Key
}

// label names the field in a finding.
func (f field) label() string {
	if f.Name != "" {
		return fmt.Sprintf("%q", f.Name)
	}
	return "with key " + f.Key
}

// keccakHex is the registry's key for a field name.
func keccakHex(s string) string {
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(s))
	return "0x" + hex.EncodeToString(h.Sum(nil))
}

var docWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_-]{1,31}`)

// fleetName matches the names fleetd's runs mint (qa-<run id>-<n>): their
// keys tell which fields exist, but their values are fleetd's own canaries
// and the names are released when the run ends, so they are not read.
var fleetName = regexp.MustCompile(`^qa-r-[0-9]{8}-`)

// fieldKeys maps key -> name for the dictionary and every word of the docs,
// and says which names the docs hold. The table is memoized on the docs'
// text: a replay hashes no word twice.
func fieldKeys(p *replay.Play, pages []replay.Page) (map[string]string, map[string]bool) {
	var text strings.Builder
	for _, pg := range pages {
		if pg.Kind == "docs" && replay.Answered(pg.Res) {
			text.WriteString(replay.Clip(replay.Body(pg.Res), 64<<10))
			text.WriteString("\n")
		}
	}
	t := keyTableMemo.Get(text.String(), buildKeyTable)
	return t.keys, t.docs
}

type keyTable struct {
	keys map[string]string
	docs map[string]bool
}

var keyTableMemo replay.Memo[keyTable]

func buildKeyTable(text string) keyTable {
	t := keyTable{keys: map[string]string{}, docs: map[string]bool{}}
	for _, w := range docWord.FindAllString(text, -1) {
		if !t.docs[w] {
			t.docs[w] = true
			t.keys[keccakHex(w)] = w
		}
	}
	for _, w := range metadataDictionary {
		if k := keccakHex(w); t.keys[k] == "" {
			t.keys[k] = w
		}
	}
	return t
}

// discoverFields learns the platform's fields from the registry's
// MetadataSet events, named through the docs and the dictionary; without
// events it falls back to dictionary names the docs mention and the common
// page fields. It returns the fields (docs-mentioned first) and the existing
// names seen in events.
func discoverFields(p *replay.Play, pages []replay.Page) (fields []field, names []string, fromEvents bool) {
	keys, docs := fieldKeys(p, pages)
	if p.Can("qa_chain") && p.Room(1) {
		r := p.Chain("metadata_events")
		if r.IsOK() {
			fromEvents = true
			byKey := map[string]int{}
			for _, e := range list(r, "result") {
				name, _ := e["name"].(string)
				key, _ := e["key"].(string)
				key = strings.ToLower(key)
				if name == "" || len(key) != 66 {
					continue
				}
				if !slices.Contains(names, name) && !fleetName.MatchString(name) {
					names = append(names, name)
				}
				i, ok := byKey[key]
				if !ok {
					i = len(fields)
					byKey[key] = i
					fields = append(fields, field{Name: keys[key], Key: key, Docs: docs[keys[key]]})
				}
				if !slices.Contains(fields[i].Names, name) {
					fields[i].Names = append(fields[i].Names, name)
				}
			}
			if len(fields) == 0 {
				p.Notef("the registry holds no MetadataSet events yet")
			}
		} else {
			p.Skip("metadata events unreadable (%s): fields taken from the docs and common names", replay.Clip(r.Err(), 100))
		}
	}
	if len(fields) == 0 {
		seen := map[string]bool{}
		for _, w := range append(slices.Clone(MetadataFields), metadataDictionary...) {
			if !seen[w] && (docs[w] || slices.Contains(MetadataFields, w)) {
				seen[w] = true
				fields = append(fields, field{Name: w, Key: keccakHex(w), Docs: docs[w]})
			}
		}
	}
	sort.SliceStable(fields, func(i, j int) bool {
		rank := func(f field) int {
			switch {
			case f.Docs:
				return 0
			case f.Name != "":
				return 1
			}
			return 2
		}
		return rank(fields[i]) < rank(fields[j])
	})
	for _, n := range p.Target().Names {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return fields, names, fromEvents
}

// list reads a result field holding a list of objects (live tools give
// []map[string]any, run records []any).
func list(r fleet.Result, k string) []map[string]any {
	var out []map[string]any
	switch v := r[k].(type) {
	case []map[string]any:
		out = v
	case []any:
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// tokenFor returns a canary for parts: "qa" and 10 hex digits, lowercase, so it
// is at once a valid element name, attribute name and JavaScript
// identifier, and cannot occur by chance.
func tokenFor(p *replay.Play, parts ...string) string {
	return fmt.Sprintf("qa%010x", replay.Hash64(fmt.Sprint(p.TargetSeed())+"|"+strings.Join(parts, "|"))&0xffffffffff)
}

// shown is one page that shows a value, and where.
type shown struct {
	url string
	l   landing
}

// liveFinding is a stored value of an existing name that is live
// injection on some page. A value can be stored in several fields of the
// name; the page does not say which of them rendered it, so all are
// candidates (the exercise probes tell them apart).
type liveFinding struct {
	fields []field
	name   string
	page   string
	value  string
	hit    liveHit
	csp    string
	merged bool // reported with an exercise finding
}

// fieldsLabel names a live finding's candidate fields.
func (lf *liveFinding) fieldsLabel() string {
	var parts []string
	for _, f := range lf.fields {
		parts = append(parts, f.label())
	}
	if len(parts) == 1 {
		return "field " + parts[0]
	}
	return "field " + strings.Join(parts, " or ") + " (they hold the same value: the page does not tell which renders it)"
}

// has reports whether f is one of the candidate fields.
func (lf *liveFinding) has(f field) bool {
	return slices.ContainsFunc(lf.fields, func(x field) bool { return x.Key == f.Key })
}

// Stored runs the stored-injection rules: at every rung, the values
// existing names already store are read and judged where pages show them
// (already-live stored injection, no writes); with the exercise rung, a
// fresh name gets a canary in each field, pages are searched for where each
// field lands, and a payload for each place is written and judged. One
// finding per (field, context). It returns the fresh name it probed with
// ("" when none) and the fields (qa_publish's key argument) it wrote to.
func Stored(p *replay.Play, pages []replay.Page) (own string, wrote []string) {
	if !p.Can("qa_fetch") {
		return
	}
	fields, names, _ := discoverFields(p, pages)
	if len(fields) == 0 {
		p.Skip("no metadata fields known: stored injection not probed")
		return
	}
	live := injectLive(p, pages, fields, names)
	own, wrote = injectExercise(p, pages, fields, live)
	for _, lf := range live {
		if lf.merged {
			continue
		}
		sev := fleet.SeverityHigh
		csp := ""
		if BlocksInlineScript(lf.csp) {
			sev, csp = fleet.SeverityMedium, " A Content-Security-Policy without 'unsafe-inline' limits the impact."
		}
		p.File(sev, replay.SurfaceOf(p.Target(), lf.page),
			fmt.Sprintf("Stored XSS (CWE-79), already live: metadata of %q (%s) arrives unescaped in %s (%s) on %s: %s became %s. Expected the field to be escaped for that context.%s",
				lf.name, lf.fieldsLabel(), lf.hit.Where, lf.hit.Ctx, lf.page, replay.Quote(lf.value, 120), became(lf.hit), csp),
			"qa_fetch", map[string]any{"url": lf.repro()})
	}
	return own, wrote
}

// repro is the live finding's page with the field in the fragment (not
// sent): findings on different fields of one page keep apart fingerprints.
func (lf *liveFinding) repro() string {
	return lf.page + "#field=" + url.QueryEscape(lf.fields[0].arg())
}

func became(h liveHit) string {
	switch h.Became {
	case "markup":
		if h.Active {
			return "markup with active content (script runs)"
		}
		return "markup"
	case "attribute":
		if h.Active {
			return "new attributes, among them an event handler"
		}
		return "new attributes"
	case "url":
		return "a script URL"
	}
	return "script code"
}

// injectLive reads the fields existing names set and judges each value on
// the pages that show the name (its face, and the index and listing pages
// already fetched). Only active breakouts count; inert markup (a field
// rendered as HTML by design, holding no script) is noted. It returns the
// live findings in the order found: one per (name, value, page, context),
// with every field holding that value as a candidate.
func injectLive(p *replay.Play, pages []replay.Page, fields []field, names []string) []*liveFinding {
	var out []*liveFinding
	if !p.Can("qa_chain") {
		return out
	}
	// Pages are told apart by where they ended up: a redirector the crawl
	// followed (/go?next=/people) is the page it lands on, not another page.
	fetched := map[string]fleet.Result{}
	for _, pg := range pages {
		if _, dup := fetched[landedAt(pg)]; !dup {
			fetched[landedAt(pg)] = pg.Res
		}
	}
	var listings []string
	for _, pg := range pages {
		if u := landedAt(pg); listingPage(pg) && !slices.Contains(listings, u) {
			listings = append(listings, u)
		}
	}
	reads, inert := 0, 0
	for _, name := range replay.First(names, injLiveNames) {
		face := p.Target().FaceURL(name)
		if _, ok := fetched[face]; !ok && p.Target().Faces != "" && replay.AllowedURL(p.Target().FetchAllow, face) && p.Room(1) {
			fetched[face] = p.Fetch(face)
		}
		showing := append([]string{face}, listings...)
		for _, f := range fields {
			if len(f.Names) > 0 && !slices.Contains(f.Names, name) {
				continue
			}
			if reads == injLiveReads || !p.Room(1) {
				return out
			}
			reads++
			r := p.Chain("metadata", name, f.arg())
			if !r.IsOK() {
				p.Skip("metadata reads failed (%s): live stored injection not checked", replay.Clip(r.Err(), 100))
				return out
			}
			value := replay.Str(r, "result")
			for _, u := range showing {
				res, ok := fetched[u]
				if !ok || !replay.Answered(res) || !looksHTML(res) {
					continue
				}
				for _, h := range liveInjection(replay.Body(res), value) {
					if !h.Active {
						inert++
						continue
					}
					if u == face && p.Filed(fleet.SurfaceFace, "", "qa_fetch", map[string]any{"url": u}) && ServedVerbatim(value, replay.Body(res)) != "" {
						continue // the stored-XSS check already reported this face
					}
					// One finding per stored value and context, on the first
					// page that shows it: the same field on more pages is
					// one bug.
					i := slices.IndexFunc(out, func(lf *liveFinding) bool {
						return lf.name == name && lf.value == value && lf.hit.Ctx.String() == h.Ctx.String()
					})
					if i < 0 {
						out = append(out, &liveFinding{name: name, page: u, value: value, hit: h, csp: replay.Headers(res)["content-security-policy"]})
						i = len(out) - 1
					}
					if !out[i].has(f) {
						out[i].fields = append(out[i].fields, f)
					}
				}
			}
		}
	}
	if inert > 0 {
		p.Notef("%d stored value(s) render as inert markup (no script): fields rendered as HTML by design, or injectable; the exercise probes tell", inert)
	}
	return out
}

// landedAt is the URL a page's fetch ended at (after redirects).
func landedAt(pg replay.Page) string {
	if u := replay.Str(pg.Res, "final_url"); u != "" {
		return u
	}
	return pg.URL
}

// listingPage reports whether pg is an HTML page of the site that may show
// names and their fields: any page fetched that answered with HTML, except
// the docs, the faces of target.names (each is read for its own name) and
// probes of commonly exposed paths. Kinds differ between page sources (the
// crawler's link kinds, secFetchAll's index and link), so only these are
// told apart.
func listingPage(pg replay.Page) bool {
	switch pg.Kind {
	case "docs", "exposed", "face":
		return false
	}
	return replay.Answered(pg.Res) && replay.Status(pg.Res) < 400 && looksHTML(pg.Res)
}

// writesLeft reads the write budget a write result reports; ok is false
// when the budget is unlimited or unknown.
func writesLeft(r fleet.Result) (int, bool) {
	if _, ok := r["writes_left"]; !ok {
		return 0, false
	}
	return replay.Int(r, "writes_left"), true
}

// storedTask is one (field, place) to test with a payload.
type storedTask struct {
	f     field
	l     landing
	pages []string // pages where the field lands there
	token string
	round int
}

// injectExercise probes each field of a fresh name with canaries; it
// reports one finding per (field, context) it confirms, merged with the
// live findings for that field and context (marked merged).
func injectExercise(p *replay.Play, pages []replay.Page, fields []field, live []*liveFinding) (own string, wrote []string) {
	if !p.Can("qa_create") || !p.Can("qa_publish") {
		if p.Has("qa_create") {
			p.Skip("qa_create or qa_publish not allowed: stored-injection canaries not written")
		}
		return
	}
	if !p.Room(4) {
		return
	}
	// The run's one fresh name (Probe.FreshName): the crawl may have minted it
	// already to see its face.
	name := p.FreshName()
	if name == "" {
		p.Skip("no fresh name: stored-injection canaries not written")
		return
	}
	own = name
	left, limited := 0, false // learnt from the first publish's writes_left
	write := func(f field, text string) bool {
		if limited && left <= injWriteSpare || !p.Room(2) || !p.Can("qa_publish") {
			return false
		}
		r := p.Call("qa_publish", map[string]any{"name": name, "key": f.arg(), "text": text})
		if l, ok := writesLeft(r); ok {
			left, limited = l, true
		}
		if !r.IsOK() {
			p.Notef("writing field %s failed (%s)", f.label(), replay.Clip(r.Err(), 100))
		}
		return r.IsOK()
	}
	// Round 0: a plain canary per field, to learn where each lands.
	var probed []field
	for _, f := range replay.First(fields, injFields) {
		if write(f, tokenFor(p, "marker", f.arg())) {
			probed = append(probed, f)
		}
	}
	if len(probed) == 0 {
		p.Skip("no canary could be written (writes left %d)", left)
		return
	}
	for _, f := range probed {
		wrote = append(wrote, f.arg())
	}
	if len(probed) < min(len(fields), injFields) {
		p.Notef("canaries went to %d of %d fields (write budget or call cap)", len(probed), len(fields))
	}
	face := p.Target().FaceURL(name)
	candidates := []string{face}
	for _, pg := range pages {
		if listingPage(pg) && sameOrigin(pg.URL, face) && !slices.Contains(candidates, pg.URL) {
			candidates = append(candidates, pg.URL)
		}
	}
	bodies := map[string]string{}
	csp := map[string]string{}
	fetchAll := func(urls []string) {
		for _, u := range replay.First(urls, injPages) {
			if !p.Room(1) {
				return
			}
			r := p.Fetch(u)
			if replay.Answered(r) && looksHTML(r) {
				bodies[u], csp[u] = replay.Body(r), replay.Headers(r)["content-security-policy"]
				if u == face {
					for _, l := range extractLinks(u, replay.Body(r)) {
						if sameOrigin(l, face) && replay.AllowedURL(p.Target().FetchAllow, l) && !slices.Contains(candidates, l) && len(candidates) < injPages {
							candidates = append(candidates, l) // pages the face links to may show the name too
						}
					}
				}
			} else {
				delete(bodies, u)
			}
		}
	}
	fetchAll(candidates)
	var showing []string
	var tasks []*storedTask
	byKey := map[string]*storedTask{}
	for _, f := range probed {
		marker := tokenFor(p, "marker", f.arg())
		for _, u := range candidates {
			b, ok := bodies[u]
			if !ok {
				continue
			}
			for _, l := range findLandings(b, marker) {
				if !slices.Contains(showing, u) {
					showing = append(showing, u)
				}
				k := f.arg() + "|" + l.key()
				t := byKey[k]
				if t == nil {
					t = &storedTask{f: f, l: l, token: tokenFor(p, "payload", f.arg(), l.key())}
					byKey[k] = t
					tasks = append(tasks, t)
				}
				if !slices.Contains(t.pages, u) {
					t.pages = append(t.pages, u)
				}
			}
		}
	}
	if len(tasks) == 0 {
		p.Notef("no canary appeared on the fresh name's pages (%s)", strings.Join(candidates, ", "))
		return
	}
	planRounds(tasks)
	confirmed := map[string][]confirmation{} // field|context -> what broke
	var order []string
	reported := 0
	report := func() {
		for _, k := range order[reported:] {
			cs := confirmed[k]
			c := cs[0]
			var what []string
			for _, x := range cs {
				if s := x.b.What; !slices.Contains(what, s) {
					what = append(what, s)
				}
			}
			page := strings.ReplaceAll(c.page, url.PathEscape(name), "NAME")
			steps := fmt.Sprintf(`Steps: qa_create; qa_publish {"name":"NAME","key":%q,"text":%q}; qa_fetch %s.`, c.t.f.arg(), c.payload, page)
			sev := fleet.SeverityHigh
			if BlocksInlineScript(csp[c.page]) {
				sev = fleet.SeverityMedium
			}
			summary := fmt.Sprintf("Stored XSS (CWE-79) in metadata field %s: written to a fresh name, it is rendered into %s on %s without escaping for it: the payload %s became %s. Expected the field to be escaped for that context.",
				c.t.f.label(), contextPhrase(c.t.l), page, replay.Quote(c.payload, 80), strings.Join(what, " and "))
			reproTool, reproArgs := "", any(nil)
			for _, lf := range live {
				if lf.merged || !lf.has(c.t.f) || lf.hit.Ctx.String() != c.t.l.Ctx.String() {
					continue
				}
				lf.merged = true
				if reproTool == "" {
					summary += fmt.Sprintf(" The existing name %q already serves a live payload there: %s.", lf.name, replay.Quote(lf.value, 100))
					lf.fields = []field{c.t.f}
					reproTool, reproArgs = "qa_fetch", map[string]any{"url": lf.repro()}
				}
			}
			if reproTool == "" {
				summary += " " + steps
			}
			surface := replay.SurfaceOf(p.Target(), c.page)
			if c.page == face {
				surface = fleet.SurfaceFace
			}
			p.File(sev, surface, summary, reproTool, reproArgs)
		}
		reported = len(order)
	}
	for round := 1; round <= injRounds; round++ {
		var batch []*storedTask
		for _, t := range tasks {
			if t.round == round {
				batch = append(batch, t)
			}
		}
		if len(batch) == 0 {
			break
		}
		if round > 1 {
			// Fields whose earlier payload may still break a container a
			// task of this round lands in go back to their plain canary.
			for _, t := range tasks {
				if t.round < round && sharesRawContainer(t, batch) {
					write(t.f, tokenFor(p, "marker", t.f.arg()))
				}
			}
		}
		var written []*storedTask
		for _, t := range batch {
			if write(t.f, payloadFor(t.l, t.token)) {
				written = append(written, t)
			}
		}
		if len(written) == 0 {
			break
		}
		fetchAll(showing)
		for _, t := range written {
			for _, u := range t.pages {
				b, ok := bodies[u]
				if !ok {
					continue
				}
				for _, br := range findBreakouts(b, t.token) {
					if !t.l.expects(br) {
						continue
					}
					k := t.f.arg() + "|" + t.l.Ctx.String()
					if _, ok := confirmed[k]; !ok {
						order = append(order, k)
					}
					c := confirmation{t: t, page: u, b: br, payload: minimalPayload(t.l, t.token, br)}
					if !slices.ContainsFunc(confirmed[k], func(x confirmation) bool { return x.b == c.b && x.page == c.page }) {
						confirmed[k] = append(confirmed[k], c)
					}
				}
			}
		}
		report() // each round's findings now: the run's deadline may end it before the next
	}
	// A live value the canaries attribute to a confirmed field is that
	// field's; its escaped twins (same value, no breakout) are not findings.
	for _, lf := range live {
		if lf.merged || len(lf.fields) < 2 {
			continue
		}
		for _, k := range order {
			c := confirmed[k][0]
			if lf.has(c.t.f) && lf.hit.Ctx.String() == c.t.l.Ctx.String() {
				lf.merged = true
			}
		}
	}
	p.Notef("stored injection: %d field(s) probed, %d place(s) found, %d confirmed", len(probed), len(tasks), len(order))
	return own, wrote
}

// confirmation is one breakout a payload caused.
type confirmation struct {
	t       *storedTask
	page    string
	b       breakout
	payload string
}

// contextPhrase describes a landing for a finding.
func contextPhrase(l landing) string {
	switch l.Ctx {
	case ctxText:
		return "element text"
	case ctxRCDATA:
		return "the text of <" + l.Tag + ">"
	case ctxComment:
		return "an HTML comment"
	case ctxAttrDQ:
		return fmt.Sprintf("the double-quoted %s attribute of <%s>", l.Attr, l.Tag)
	case ctxAttrSQ:
		return fmt.Sprintf("the single-quoted %s attribute of <%s>", l.Attr, l.Tag)
	case ctxAttrUQ:
		return fmt.Sprintf("the unquoted %s attribute of <%s>", l.Attr, l.Tag)
	case ctxURL:
		return fmt.Sprintf("the URL in %s of <%s>", l.Attr, l.Tag)
	case ctxHandler:
		return fmt.Sprintf("a %s in the %s handler of <%s>", l.JS, l.Attr, l.Tag)
	case ctxScript:
		return fmt.Sprintf("a %s in a <script> element", l.JS)
	case ctxStyle:
		return "a <style> element"
	}
	return "the page"
}

// planRounds gives each task a round: a field holds one payload at a time,
// so its places go to successive rounds; and two fields landing in the same
// raw-text element or comment are tested apart, since a payload closing
// that element would move where the other lands.
func planRounds(tasks []*storedTask) {
	for _, t := range tasks {
		for r := 1; ; r++ {
			clash := false
			for _, o := range tasks {
				if o == t || o.round != r {
					continue
				}
				if o.f.Key == t.f.Key || sharesRawContainer(o, []*storedTask{t}) {
					clash = true
					break
				}
			}
			if !clash {
				t.round = r
				break
			}
		}
	}
}

// rawContainer reports whether a landing is inside an element or comment a
// payload closes (script, style, title, textarea, a comment).
func rawContainer(l landing) bool {
	return l.Ctx == ctxScript || l.Ctx == ctxStyle || l.Ctx == ctxRCDATA || l.Ctx == ctxComment
}

func sharesRawContainer(t *storedTask, others []*storedTask) bool {
	if !rawContainer(t.l) {
		return false
	}
	for _, o := range others {
		if o.f.Key == t.f.Key || !rawContainer(o.l) || o.l.Container != t.l.Container {
			continue
		}
		for _, u := range o.pages {
			if slices.Contains(t.pages, u) {
				return true
			}
		}
	}
	return false
}

// payloadFor is the smallest text that escapes landing l, carrying token t.
// For script it carries two independent attempts: out of the JavaScript
// string it is in (judged on the script's text before the end tag) and out
// of the element (judged on the markup after it).
func payloadFor(l landing, t string) string {
	switch l.Ctx {
	case ctxText:
		return "<" + t + ">"
	case ctxRCDATA:
		return "</" + l.Tag + "><" + t + ">"
	case ctxComment:
		return "--><" + t + ">"
	case ctxAttrDQ:
		return `" ` + t + `="`
	case ctxAttrSQ:
		return `' ` + t + `='`
	case ctxAttrUQ:
		return "x " + t + "=1"
	case ctxURL:
		return "javascript:" + harmless(t)
	case ctxHandler:
		return jsBreak(l.JS, t)
	case ctxScript:
		return jsBreak(l.JS, t) + "</script><" + t + ">"
	case ctxStyle:
		return "</style><" + t + ">"
	}
	return "<" + t + ">"
}

// harmless is the code a payload puts in code position: a property of the
// global object named by the token, called only when defined. Nothing
// defines it, so where a platform keeps or serves the payload it throws
// nothing and does nothing in a visitor's browser; the breakout is judged
// by reading the served page (the token in code position), not by running
// it.
func harmless(t string) string { return "self." + t + "?.()" }

// jsBreak leaves the JavaScript state st and puts t in code position
// (harmless).
func jsBreak(st jsState, t string) string {
	t = harmless(t)
	switch st {
	case jsDQ:
		return `"-` + t + `-"`
	case jsSQ:
		return `'-` + t + `-'`
	case jsTemplate:
		return "${" + t + "}"
	case jsLineComment:
		return "\n" + t + "\n"
	case jsBlockComment:
		return "*/" + t + "/*"
	case jsRegex:
		return "/-" + t + "-/"
	}
	return t
}

// minimalPayload is the part of the payload for l that caused b.
func minimalPayload(l landing, t string, b breakout) string {
	if l.Ctx == ctxScript {
		if b.Kind == "markup" {
			return "</script><" + t + ">"
		}
		return jsBreak(l.JS, t)
	}
	return payloadFor(l, t)
}

// MetadataFields are the metadata keys commonly rendered into a page.
var MetadataFields = []string{"face", "title", "html", "content", "description", "bio"}

// ServedVerbatim returns the first active fragment of stored that page
// contains as is, "" if none.
func ServedVerbatim(stored, page string) string {
	for _, f := range ActiveHTML.FindAllString(stored, 8) {
		if strings.Contains(page, f) {
			return f
		}
	}
	return ""
}

// BlocksInlineScript reports whether a CSP stops inline script.
func BlocksInlineScript(csp string) bool {
	if csp == "" {
		return false
	}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(strings.ToLower(d))
		if len(f) > 0 && (f[0] == "script-src" || f[0] == "default-src") {
			return !slices.Contains(f[1:], "'unsafe-inline'")
		}
	}
	return false
}

// ActiveHTML is content that runs script in a browser: script elements,
// event-handler attributes, javascript: URLs, frames and plugins.
var ActiveHTML = regexp.MustCompile(`(?is)<script\b[^>]*>.*?</script\s*>|<script\b[^>]*>|<[a-z][a-z0-9]*\b[^>]*\son[a-z]+\s*=[^>]*>|<[a-z][a-z0-9]*\b[^>]*(?:href|src|action)\s*=\s*["']?\s*javascript:[^>]*>|<(?:iframe|object|embed)\b[^>]*>`)
