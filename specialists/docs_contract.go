package specialists

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/docclaims"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// docClaim is a claim and the page that makes it.
type docClaim struct {
	docclaims.Claim
	doc string
}

// claimsMemo caches docclaims.Claims over docs bodies across replays.
var claimsMemo replay.Memo[[]docclaims.Claim]

// claimsOf returns the claims of a docs page (memoized; do not modify).
func claimsOf(docURL, contentType, text string) []docclaims.Claim {
	return claimsMemo.Get(docURL+"\x00"+contentType+"\x00"+text, func(string) []docclaims.Claim {
		return docclaims.Claims(docURL, contentType, text)
	})
}

// where says where the claim is made, quoting the line.
func (c docClaim) where() string {
	return fmt.Sprintf("%s line %d: %s", c.doc, c.Line, replay.Quote(c.Quote, 140))
}

// also quotes a promise made on another line than the mention.
func (c docClaim) also(line int, q string) string {
	if line == 0 || line == c.Line || q == "" {
		return ""
	}
	return fmt.Sprintf(" (line %d: %s)", line, replay.Quote(q, 120))
}

// contract checks what the docs promise (Claims on every crawled docs,
// markdown, text or HTML page but faces, which hold user content): each
// documented endpoint is requested as documented where a tool can, and
// every broken promise of one endpoint (method, liveness, status, content
// type, fields) is one finding quoting the doc lines.
func (u *uxRun) contract(pages []replay.Page) {
	var claims []docClaim
	for _, pg := range pages {
		if !pg.OK() || pg.Kind == "face" || pg.Kind == "fresh-face" {
			continue
		}
		ct := replay.Str(pg.Res, "content_type")
		switch crawl.Sniff(pg.URL, ct, replay.Body(pg.Res)) {
		case crawl.KindMarkdown, crawl.KindText, crawl.KindHTML:
		default:
			continue
		}
		for _, c := range claimsOf(pg.URL, ct, replay.Body(pg.Res)) {
			if !slices.ContainsFunc(claims, func(x docClaim) bool { return x.Method == c.Method && x.URL == c.URL }) {
				claims = append(claims, docClaim{c, pg.URL})
			}
		}
	}
	name := replay.FirstName(u.p.Target())
	checked, unchecked := 0, 0
	for _, c := range claims {
		url, ok := crawl.Fill(c.URL, name)
		if !ok || !replay.AllowedURL(u.p.Target().FetchAllow, url) {
			unchecked++
			continue
		}
		if checked == uxClaims {
			unchecked++
			continue
		}
		checked++
		switch {
		case c.Method == "GET" || c.Method == "HEAD":
			u.checkGet(c, url)
		case sameEndpoint(url, u.p.Target().Call):
			u.checkCall(c)
		default:
			u.checkOther(c, url)
		}
	}
	if checked+unchecked > 0 {
		u.p.Notef("docs contract: %d documented endpoints checked, %d not (placeholders without a name, off the allowlist, or over the limit)", checked, unchecked)
	}
}

// sameEndpoint reports whether a and b are the same URL but for the query.
func sameEndpoint(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	cut := func(s string) string { s, _, _ = strings.Cut(s, "?"); return strings.TrimSuffix(s, "/") }
	return cut(a) == cut(b)
}

// checkGet requests a documented GET (or HEAD) endpoint and compares the
// answer with every promise.
func (u *uxRun) checkGet(c docClaim, url string) {
	r, ok := u.get(url)
	if !ok {
		return
	}
	var broken []string
	s := replay.Status(r)
	switch {
	case !replay.Answered(r):
		broken = append(broken, "it does not answer ("+replay.Clip(replay.OneLine(r.Err()), 100)+")")
	case s == 405 || s == 501:
		allow := replay.Headers(r)["allow"]
		if allow != "" {
			allow = " (Allow: " + allow + ")"
		}
		broken = append(broken, fmt.Sprintf("the endpoint answers HTTP %d%s", s, allow))
	case s == 404 || s == 410 || s >= 500:
		broken = append(broken, fmt.Sprintf("it answers HTTP %d", s))
	case (s == 401 || s == 403) && u.login.SignIn():
		u.p.Notef("documented %s %s answers HTTP %d: it is behind the documented login (%s %s); ux reads what is public only", c.Method, url, s, u.login.Verify.Method, u.login.Verify.URL)
		return
	case s >= 400:
		u.p.Notef("documented %s %s answers HTTP %d (needs credentials or parameters the docs do not show)", c.Method, url, s)
		return
	default:
		broken = u.answerPromises(c, r, s)
	}
	if len(broken) == 0 {
		return
	}
	u.dead[url] = true
	u.p.File(fleet.SeverityMedium, fleet.SurfaceDocs,
		fmt.Sprintf("The docs promise %s %s (%s), but %s. Expected the endpoint to keep what its docs promise, or the docs to say what it does.",
			c.Method, url, c.where(), strings.Join(broken, "; ")),
		"qa_fetch", map[string]any{"url": url})
	if s >= 400 {
		u.leak(replay.Body(r), "The error answer of documented "+c.Method+" "+url, replay.SurfaceOf(u.p.Target(), url), "qa_fetch", map[string]any{"url": url})
	}
}

// answerPromises compares a 2xx or 3xx answer with the claim's promised
// status, type and fields.
func (u *uxRun) answerPromises(c docClaim, r fleet.Result, s int) []string {
	var broken []string
	if c.Status != 0 && s != c.Status {
		broken = append(broken, fmt.Sprintf("it answers HTTP %d, not the %d promised%s", s, c.Status, c.also(c.StatusLine, c.StatusQuote)))
	}
	ct := replay.Str(r, "content_type")
	got := actualType(ct, replay.Body(r))
	if c.Type != "" && got != "" && !compatibleTypes(c.Type, got) {
		broken = append(broken, fmt.Sprintf("it answers %s (Content-Type %q), not the %s promised%s", got, replay.Clip(ct, 60), strings.ToUpper(c.Type), c.also(c.TypeLine, c.TypeQuote)))
	} else if c.Type == "json" && got == "json" && !replay.Flag(r, "truncated") && !json.Valid([]byte(replay.Body(r))) {
		broken = append(broken, "its body is not valid JSON"+c.also(c.TypeLine, c.TypeQuote))
	}
	if len(c.Fields) > 0 && !replay.Flag(r, "truncated") {
		if keys, ok := jsonKeys(replay.Body(r)); ok {
			var missing []string
			for _, f := range c.Fields {
				if !slices.Contains(keys, f) {
					missing = append(missing, f)
				}
			}
			if len(missing) > 0 {
				broken = append(broken, fmt.Sprintf("its JSON lacks the promised field(s) %s%s", strings.Join(replay.First(missing, 6), ", "), c.also(c.FieldsLine, c.FieldsQuote)))
			}
		}
	}
	return broken
}

// checkCall checks promises about the call endpoint with a plain call
// (exercise rung): qa_call POSTs JSON, so only a POST claim is checked;
// its answer shows the status, content type and whether it has a reply.
func (u *uxRun) checkCall(c docClaim) {
	if c.Method != "POST" {
		u.p.Notef("docs promise %s on the call endpoint; qa_call only sends POST", c.Method)
		return
	}
	target := replay.FirstName(u.p.Target())
	if target == "" {
		return
	}
	a := replay.CallArgs{Target: target, Message: "hello"}
	ex, ok := u.agent(a)
	if !ok || replay.RefusedByDial(ex) || !replay.Answered(ex.Result) {
		return
	}
	r, s := ex.Result, replay.Status(ex.Result)
	var broken []string
	switch {
	case s == 404 || s == 405 || s == 501:
		broken = append(broken, fmt.Sprintf("the endpoint answers a call to %q with HTTP %d", target, s))
	case s < 400:
		if c.Status != 0 && s != c.Status {
			broken = append(broken, fmt.Sprintf("it answers HTTP %d, not the %d promised%s", s, c.Status, c.also(c.StatusLine, c.StatusQuote)))
		}
		ct := replay.Str(r, "content_type")
		if got := actualType(ct, replay.Body(r)); c.Type != "" && got != "" && !compatibleTypes(c.Type, got) && !(c.Type == "json" && replay.Flag(r, "json")) {
			broken = append(broken, fmt.Sprintf("it answers %s (Content-Type %q), not the %s promised%s", got, replay.Clip(ct, 60), strings.ToUpper(c.Type), c.also(c.TypeLine, c.TypeQuote)))
		}
		if slices.Contains(c.Fields, "reply") && !replay.Flag(r, "json") {
			broken = append(broken, "its answer has no reply field"+c.also(c.FieldsLine, c.FieldsQuote))
		}
	}
	if len(broken) == 0 {
		return
	}
	u.p.File(fleet.SeverityMedium, fleet.SurfaceDocs,
		fmt.Sprintf("The docs promise %s %s (%s), but %s. Expected the endpoint to keep what its docs promise, or the docs to say what it does.",
			c.Method, u.p.Target().Call, c.where(), strings.Join(broken, "; ")),
		"qa_call", a)
}

// checkOther checks a documented method no tool sends (POST elsewhere,
// PUT, DELETE, ...): a GET that answers 405 with an Allow header lacking
// the documented method shows the endpoint does not take it.
func (u *uxRun) checkOther(c docClaim, url string) {
	r, ok := u.get(url)
	if !ok || replay.Status(r) != 405 {
		return
	}
	allow := replay.Headers(r)["allow"]
	if allow == "" {
		return
	}
	for _, m := range strings.Split(allow, ",") {
		if strings.EqualFold(strings.TrimSpace(m), c.Method) {
			return
		}
	}
	u.p.File(fleet.SeverityMedium, fleet.SurfaceDocs,
		fmt.Sprintf("The docs promise %s %s (%s), but the endpoint allows only %s (Allow header of a GET answered 405). Expected the documented method to be accepted.",
			c.Method, url, c.where(), allow),
		"qa_fetch", map[string]any{"url": url})
}

// actualType is the type family of an answer: its Content-Type's, or the
// body's when the header says nothing useful.
func actualType(ct, b string) string {
	if f := docclaims.TypeFamily(strings.SplitN(ct, ";", 2)[0]); f != "" && !strings.Contains(strings.ToLower(ct), "octet-stream") {
		return f
	}
	switch crawl.Sniff("", ct, b) {
	case crawl.KindJSON:
		return "json"
	case crawl.KindHTML:
		return "html"
	case crawl.KindXML:
		return "xml"
	case crawl.KindMarkdown:
		return "markdown"
	case crawl.KindText:
		return "text"
	}
	return ""
}

// compatibleTypes reports whether an answer of type got keeps a promise of
// type want (plain text and markdown are both text).
func compatibleTypes(want, got string) bool {
	if want == got {
		return true
	}
	text := func(t string) bool { return t == "text" || t == "markdown" }
	return text(want) && text(got)
}

// jsonKeys returns the top-level keys of a JSON object body, or of the
// first object of an array; ok is false when the body is not JSON.
func jsonKeys(b string) ([]string, bool) {
	var v any
	if err := json.Unmarshal([]byte(b), &v); err != nil {
		return nil, false
	}
	if arr, ok := v.([]any); ok {
		if len(arr) == 0 {
			return nil, false // nothing to compare
		}
		v = arr[0]
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, true
}
