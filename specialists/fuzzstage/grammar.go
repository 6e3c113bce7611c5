package fuzzstage

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Call-grammar limits.
const (
	grammarHangs = 2 // timeouts before the grammar stops (each costs the call timeout)
)

// grammarCase is one request of the call-endpoint grammar.
type grammarCase struct {
	what string
	args replay.CallArgs
	// size, for a case made of one repeated unit (a long message, deep
	// nesting), rebuilds it at n units; n is the size sent.
	size func(n int) replay.CallArgs
	n    int
}

// grammarShrinks bounds the halvings tried to fit a size case's repro into
// a feedback entry (each a call; for a hang each costs the call timeout).
const grammarShrinks = 4

// rawBody returns a pointer for callArgs.RawBody.
func rawBody(s string) *string { return &s }

// callGrammar returns the call-endpoint grammar for a target name: every
// way a request can depart from POST {"target","message"} as JSON strings,
// one departure at a time, each in its smallest form.
//   - messages: empty, whitespace only, very long (16 KB), unicode (emoji,
//     right-to-left and combining marks, a byte-order mark), control
//     characters (NUL, escape sequences, a bell, CR LF), a JSON fragment, a
//     format string;
//   - every JSON type where a string is expected: target and message as a
//     number, a boolean, null, an array and an object;
//   - missing and extra fields: {}, no message, no target, an extra field, a
//     duplicated key;
//   - malformed bodies: empty, whitespace, truncated, trailing garbage, a
//     missing comma, a lone surrogate escape, an array, null, deep nesting,
//     a 60 KB string;
//   - content types: a JSON body declared text/plain, a form-encoded body, an
//     XML body.
func callGrammar(target string) []grammarCase {
	t := target
	msg := func(what, m string) grammarCase {
		return grammarCase{what: what, args: replay.CallArgs{Target: t, Message: m}}
	}
	raw := func(what, b string) grammarCase {
		return grammarCase{what: what, args: replay.CallArgs{Target: t, Message: "", RawBody: rawBody(b)}}
	}
	typed := func(what, b, ct string) grammarCase {
		return grammarCase{what: what, args: replay.CallArgs{Target: t, Message: "", RawBody: rawBody(b), ContentType: ct}}
	}
	q := func(s string) string { return string(replay.Marshal(s)) }
	sized := func(what string, n int, build func(n int) replay.CallArgs) grammarCase {
		return grammarCase{what: what, args: build(n), size: build, n: n}
	}
	longMessage := func(n int) replay.CallArgs { return replay.CallArgs{Target: t, Message: strings.Repeat("A", n)} }
	nested := func(n int) replay.CallArgs {
		return replay.CallArgs{Target: t, RawBody: rawBody(`{"target":` + q(t) + `,"message":"hi","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)}
	}
	longBody := func(n int) replay.CallArgs {
		return replay.CallArgs{Target: t, RawBody: rawBody(`{"target":` + q(t) + `,"message":"` + strings.Repeat("A", n) + `"}`)}
	}
	cases := []grammarCase{
		msg("an empty message", ""),
		msg("a whitespace-only message", " \t\n "),
		sized("a 16 KB message", 16000, longMessage),
		msg("an emoji message", "\U0001F600\U0001F4A5 héllo"),
		msg("right-to-left and combining marks", "\u202eolleh\u0301\u200d"),
		msg("a byte-order mark", "\ufeffhello"),
		msg("a NUL character", "a\x00b"),
		msg("terminal escape sequences", "\x1b[31mred\x1b[0m\x07"),
		msg("CR LF line breaks", "line1\r\nline2\r\n"),
		msg("a JSON fragment message", `{"`),
		msg("a format-string message", "%s%s%n%x"),
	}
	for _, v := range []struct{ what, json string }{
		{"a number", "7"}, {"a boolean", "true"}, {"null", "null"}, {"an array", `["x"]`}, {"an object", `{"x":"y"}`},
	} {
		cases = append(cases,
			raw("target as "+v.what, `{"target":`+v.json+`,"message":"hi"}`),
			raw("message as "+v.what, `{"target":`+q(t)+`,"message":`+v.json+`}`))
	}
	cases = append(cases,
		raw("an empty object", `{}`),
		raw("no message field", `{"target":`+q(t)+`}`),
		raw("no target field", `{"message":"hi"}`),
		raw("an extra field", `{"target":`+q(t)+`,"message":"hi","qa_extra":"x"}`),
		raw("a duplicated key", `{"target":`+q(t)+`,"target":"qa-other","message":"hi"}`),
		raw("an empty body", ``),
		raw("a whitespace body", " \n"),
		raw("truncated JSON", `{"target": `),
		raw("trailing garbage", `{"target":`+q(t)+`,"message":"hi"}}}`),
		raw("a missing comma", `{"target":`+q(t)+` "message":"hi"}`),
		raw("a lone surrogate escape", `{"target":`+q(t)+`,"message":"\ud800"}`),
		raw("a JSON array", `[]`),
		raw("JSON null", `null`),
		sized("deep nesting", 2000, nested),
		sized("a 60 KB string", 60000, longBody),
		typed("a JSON body declared text/plain", `{"target":`+q(t)+`,"message":"hi"}`, "text/plain"),
		typed("a form-encoded body", "target="+t+"&message=hi", "application/x-www-form-urlencoded"),
		typed("an XML body", "<call><target>"+t+"</target><message>hi</message></call>", "application/xml"),
	)
	return cases
}

// callClass is how the endpoint answered one grammar request.
type callClass struct {
	name   string // hang, down, 5xx, leak, empty, fine
	status int
	leaks  []replay.Leak
}

// key is the behaviour: class, status and the kinds of internals leaked.
// Requests with the same key are one finding.
func (c callClass) key() string {
	return fmt.Sprintf("%s/%d/%s", c.name, c.status, strings.Join(replay.LeakKinds(c.leaks), ","))
}

// classifyCall classifies a qa_call answer: a timeout is a hang; no answer
// from an endpoint that answered before is down; 5xx; a leak of internals
// in any other answer; a 2xx with an empty reply; anything else (a clean
// 4xx, a reply) is fine.
func classifyCall(r fleet.Result) callClass {
	switch {
	case replay.Str(r, "hint") == "timeout":
		return callClass{name: "hang"}
	case !replay.Answered(r):
		return callClass{name: "down"}
	}
	s := replay.Status(r)
	leaks := replay.ScanLeaks(replay.Body(r))
	switch {
	case s >= 500:
		return callClass{name: "5xx", status: s, leaks: leaks}
	case len(leaks) > 0:
		return callClass{name: "leak", status: s, leaks: leaks}
	case s >= 200 && s < 300 && strings.TrimSpace(replay.Body(r)) == "":
		return callClass{name: "empty", status: s}
	}
	return callClass{name: "fine", status: s}
}

// behaviour is one distinct answer of the grammar and the requests that
// got it.
type behaviour struct {
	class  callClass
	whats  []string
	best   grammarCase // the smallest request showing it
	res    fleet.Result
	shrunk string // how shrink changed best, for the summary
}

// fuzzCallGrammar sends the call grammar (exercise rung), classifies each
// answer and files one finding per distinct behaviour (class, status, kinds
// of internals leaked) with the smallest request as the repro: a hang, or
// an endpoint that stops answering, is high; a 5xx that leaks internals is
// high, one that does not medium; leaked internals in another answer
// medium; an empty 2xx to a malformed request low. High findings are filed
// only once their repro reproduces (Probe.ReportChecked).
func fuzzCallGrammar(p *replay.Play) {
	if !p.Can("qa_call") {
		p.Skip("qa_call unavailable: the call-endpoint grammar was not sent")
		return
	}
	target := replay.FirstName(p.Target())
	if target == "" {
		target = "qa-fuzz"
	}
	var order []string
	seen := map[string]*behaviour{}
	heard, hangs, sent := false, 0, 0
	cases := callGrammar(target)
	for _, c := range cases {
		if !p.Room(1) || !p.Can("qa_call") {
			p.Notef("call grammar: %d of %d requests sent (cap)", sent, len(cases))
			break
		}
		ex := p.Exchange("qa_call", c.args)
		if replay.RefusedByDial(ex) {
			p.Skip("qa_call refused (%s): the call-endpoint grammar was not sent", ex.Result.Err())
			return
		}
		sent++
		r := ex.Result
		cl := classifyCall(r)
		if cl.name == "down" && !heard {
			p.Skip("the call endpoint did not answer (%s): the call-endpoint grammar was not sent", replay.Clip(r.Err(), 120))
			return
		}
		heard = heard || replay.Answered(r)
		if cl.name == "hang" {
			hangs++
		}
		down := cl.name == "down"
		if cl.name != "fine" && !(cl.name == "empty" && c.what == "an empty message") {
			k := cl.key()
			b := seen[k]
			if b == nil {
				b = &behaviour{class: cl, best: c, res: r}
				seen[k] = b
				order = append(order, k)
			} else if len(replay.Marshal(c.args)) < len(replay.Marshal(b.best.args)) {
				b.best, b.res = c, r
			}
			b.whats = append(b.whats, c.what)
		}
		if down {
			// The request that brought the endpoint down is the repro;
			// later ones would only meet an endpoint that is gone.
			p.Notef("call grammar stopped: the endpoint stopped answering after %s", c.what)
			break
		}
		if hangs == grammarHangs {
			p.Notef("call grammar stopped after %d hangs", hangs)
			break
		}
	}
	for _, k := range order {
		b := seen[k]
		shrink(p, b)
		reportBehaviour(p, b, len(cases))
	}
}

// shrink halves a size case that is a behaviour's repro while its repro
// does not fit a feedback entry and the smaller request still shows the
// same behaviour, so the finding carries a runnable repro.
func shrink(p *replay.Play, b *behaviour) {
	c := b.best
	if c.size == nil {
		return
	}
	key := b.class.key()
	tries := grammarShrinks
	if b.class.name == "hang" {
		tries = 2 // each try of a hang waits out the call timeout
	}
	for range tries {
		if p.ReproFits(fleet.SurfaceCall, "qa_call", c.args) || c.n < 16 || !p.Room(2) || !p.Can("qa_call") {
			break
		}
		smaller := grammarCase{what: c.what, size: c.size, n: c.n / 2}
		smaller.args = c.size(smaller.n)
		r := p.Agent(smaller.args)
		if classifyCall(r).key() != key {
			break
		}
		c = smaller
	}
	if c.n != b.best.n {
		b.best, b.shrunk = c, fmt.Sprintf(" (shrunk to %d units, the same behaviour)", c.n)
	}
}

// reportBehaviour files one behaviour of the call grammar.
func reportBehaviour(p *replay.Play, b *behaviour, total int) {
	cl := b.class
	list := strings.Join(replay.First(b.whats, 6), ", ")
	if n := len(b.whats); n > 6 {
		list += fmt.Sprintf(" and %d more", n-6)
	}
	var sev fleet.Severity
	var got, want string
	switch cl.name {
	case "hang":
		sev, got, want = fleet.SeverityHigh, "does not answer within the call timeout", "a prompt 4xx"
	case "down":
		sev, got, want = fleet.SeverityHigh, "stops answering ("+replay.Clip(replay.OneLine(b.res.Err()), 100)+")", "a 4xx and an endpoint that stays up"
	case "5xx":
		sev, got, want = fleet.SeverityMedium, fmt.Sprintf("answers HTTP %d", cl.status), "a 4xx client error"
		if len(cl.leaks) > 0 {
			sev, got = fleet.SeverityHigh, got+" and leaks internals: "+replay.DescribeLeaks(cl.leaks)
		}
	case "leak":
		sev, got, want = fleet.SeverityMedium, fmt.Sprintf("answers HTTP %d leaking internals: %s", cl.status, replay.DescribeLeaks(cl.leaks)), "a generic error message"
	case "empty":
		sev, got, want = fleet.SeverityLow, fmt.Sprintf("answers HTTP %d with an empty body", cl.status), "a 4xx that says what is wrong, or a reply"
	default:
		return
	}
	key := cl.key()
	p.FileChecked(sev, fleet.SurfaceCall,
		fmt.Sprintf("The call endpoint %s on %d of %d grammar requests (%s), where %s was expected. Smallest: %s%s.",
			got, len(b.whats), total, list, want, b.best.what, b.shrunk),
		"qa_call", b.best.args,
		func(r fleet.Result) bool { return classifyCall(r).key() == key })
}
