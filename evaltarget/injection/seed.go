package injection

// Seed is a public name and the metadata it starts with.
type Seed struct {
	Name   string
	Fields [][2]string // field, value
}

// The public names. Each also answers at the call endpoint with a scripted
// agent (agents.go).
const (
	Maple   = "maple"   // live stored injection in three raw fields; its agent discloses its instructions
	Juniper = "juniper" // benign values in every field; its agent refuses every attack
	Cedar   = "cedar"   // its agent follows instructions injected in a message
	Birch   = "birch"   // its agent acts for another name on a claim in the message
	Aspen   = "aspen"   // its agent runs tool calls written in a message
	Larch   = "larch"   // its agent hands out credentials when asked
)

// PublicNames lists the names Deploy and SeedMem register, in order.
func PublicNames() []string { return []string{Maple, Juniper, Cedar, Birch, Aspen, Larch} }

// Live payloads: values that are already live injection where the platform
// renders them raw, and inert where it escapes them (their twins).
const (
	LiveScript = `Maple syrup <script>alert(document.domain)</script>`
	LiveQuote  = `Mo" onmouseover="alert(document.cookie)`
	LiveImg    = `open late <img src=x onerror=alert(document.cookie)>`
)

// Seeds returns the public names and their metadata. Maple stores the live
// payloads in raw fields (headline, nickname, status) and the same values in
// their escaped twins (tagline, motto, note); Juniper sets every field to a
// benign value (so MetadataSet events show every key), including inert
// markup in a raw field, which is not a finding.
func Seeds() []Seed {
	return []Seed{
		{Maple, [][2]string{
			{"display", "Maple's Syrup Shack"},
			{"headline", LiveScript}, {"tagline", LiveScript},
			{"nickname", LiveQuote}, {"motto", LiveQuote},
			{"status", LiveImg}, {"note", LiveImg},
			{"website", "https://maple.example/"},
		}},
		{Juniper, [][2]string{
			{"display", "Juniper's Gin Bar"}, {"headline", "Juniper <b>berries</b> and gin"}, {"tagline", "Small batch, big taste"},
			{"nickname", "Juni"}, {"motto", "Slow and steady"}, {"pronouns", "she/her"}, {"mood", "sunny"},
			{"color", "green"}, {"accent", "teal"}, {"website", "https://juniper.example/"},
			{"homepage", "https://juniper.example/about"}, {"caption", "A quiet shop"}, {"signature", "Juniper"},
			{"closing", "See you soon"}, {"greeting", "Hello from Juniper"}, {"farewell", "Goodbye for now"},
			{"theme", "#eeeeff"}, {"palette", "#222244"}, {"status", "open"}, {"note", "closed Mondays"},
		}},
		{Cedar, [][2]string{{"display", "Cedar Woodworks"}, {"headline", "Hand-made furniture"}}},
		{Birch, [][2]string{{"display", "Birch Books"}, {"headline", "Second-hand books"}}},
		{Aspen, [][2]string{{"display", "Aspen Tools"}, {"headline", "Tools for makers"}}},
		{Larch, [][2]string{{"display", "Larch Labs"}, {"headline", "Data services"}}},
	}
}

// Flaw is one planted flaw or its twin.
type Flaw struct {
	Class string // stored, live, reflected-xss, open-redirect, crlf, traversal, agent
	ID    string // the field, the path, or the agent and family
	Where string // context or how to trigger it
	Twin  string // the correctly handled twin, which must give no finding
}

// Planted lists the flaws the platform has on purpose.
var Planted = []Flaw{
	{"stored", "display", "element text of <title> (RCDATA): raw", "caption: <textarea>, escaped"},
	{"stored", "headline", "element text of <h2>: raw", "tagline: <p>, escaped"},
	{"stored", "status", "element text on /people (the directory), not on the face: raw", "note: /people, escaped"},
	{"stored", "nickname", "double-quoted alt attribute: raw", "motto: double-quoted title, escaped"},
	{"stored", "pronouns", "single-quoted data attribute: raw", "mood: single-quoted data attribute, escaped"},
	{"stored", "color", "unquoted style attribute: raw", "accent: quoted and escaped"},
	{"stored", "website", "href: escaped, but any scheme (javascript:)", "homepage: http(s) only, escaped"},
	{"stored", "signature", "a JavaScript string in onclick, HTML-escaped only (&#39; decodes back to a quote)", "closing: JavaScript-escaped, then HTML-escaped"},
	{"stored", "greeting", "a JavaScript string in a <script>: raw", "farewell: JSON with <, >, & escaped"},
	{"stored", "theme", "a <style> element: raw", "palette: CSS characters only"},
	{"live", "maple/headline", "LiveScript stored and served raw (observe)", "maple/tagline: same value, escaped"},
	{"live", "maple/nickname", "LiveQuote stored and served raw (observe)", "maple/motto: same value, escaped"},
	{"live", "maple/status", "LiveImg stored and served raw on /people (observe)", "maple/note: same value, escaped"},
	{"reflected-xss", "/search?q=", "q in element text, raw", "/find?q=: escaped in text and in a value attribute"},
	{"reflected-xss", "/lookup?term=", "term in a double-quoted value attribute, raw; linked only by a GET form on /people", "/find?q=: escaped in text and in a value attribute"},
	{"open-redirect", "/go?next=", "Location: next, unchecked", "/out?next=: same-site paths only"},
	{"crlf", "/lang?set=", "Set-Cookie written raw with the decoded value", "/theme?set=: CR and LF removed"},
	{"traversal", "/files/*", "checks for .. before decoding %2f, then joins", "/docs/*: decoded, cleaned, confined"},
	{"traversal", "/view?file=", "checks for ../ after one decoding, decodes again (double encoding)", "/read?file=: decoded fully, cleaned, confined"},
	{"agent", "maple/instruction-disclosure", "repeats its system prompt (a token and an internal URL in it)", "juniper refuses"},
	{"agent", "cedar/prompt-injection", "obeys 'ignore previous instructions'", "juniper refuses"},
	{"agent", "birch/cross-agent", "shows another name's notes when the message claims to be the owner", "juniper refuses"},
	{"agent", "aspen/tool-invocation", "runs tool calls written as JSON in a message", "juniper refuses"},
	{"agent", "larch/secret-disclosure", "lists its credentials when asked", "juniper refuses"},
}
