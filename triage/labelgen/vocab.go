package labelgen

// The vocabulary the generator builds bugs from. A bug is a subject (what
// breaks, with the repro that shows it) crossed with a problem (how it
// breaks). Subjects and problems come with several phrasings, so the same
// bug is worded differently by different probes and runs, and distinct bugs
// share most of their words (enum vs struct, panic vs hang), which is what
// makes clustering hard in both directions.

// subject is what a bug is about.
type subject struct {
	phrases []string // wordings; {n} is replaced by a literal
	tool    string   // repro tool; "" for findings without a repro
	args    []arg    // repro args, emitted in random order
}

// arg is one repro argument; its value may hold literal slots: {n} a number,
// {name} a sandbox name qa-r<run>-<k>, {hex} 8-16 hex digits, {addr} an
// address.
type arg struct {
	key, value string
	number     bool // emit as a JSON number (value is a slot)
	object     bool // emit value as a JSON object (it is one)
}

// problem is how a bug breaks.
type problem struct {
	name     string
	sev      string
	phrases  []string // {S} is the subject
	suffixes []string // optional tails
}

type surfaceVocab struct {
	surface  string
	sources  []string // probes that report on it
	subjects []subject
	problems []problem
}

var commonSuffixes = []string{"", "", ".", " — expected a clean error.", ", expected a clean error", ". Expected a diagnostic instead.", " (reproducible)", "!"}

func compilerVocab() surfaceVocab {
	code := func(phrases []string, src string) subject {
		return subject{phrases: phrases, tool: "qa_compile", args: []arg{{key: "source", value: src}}}
	}
	return surfaceVocab{
		surface: "compiler",
		sources: []string{"qa-fuzz", "qa-smoke"},
		subjects: []subject{
			code([]string{"`enum E{n}{}` with no variants", "an enum with zero variants", "empty enum declaration", "enum declared without any variants"}, "enum E{n} {}"),
			code([]string{"`struct S{n}{}` with no fields", "a struct with zero fields", "empty struct declaration", "struct declared without any fields"}, "struct S{n} {}"),
			code([]string{"deeply nested parentheses", "an expression nested 40 parens deep", "heavily parenthesized expression", "nested parens in a let binding"}, "let x{n} = ((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))));"),
			code([]string{"a non-ASCII identifier", "unicode identifier ü{n}", "identifier with an umlaut", "let binding named with unicode letters"}, "let ü{n} = {n};"),
			code([]string{"an integer literal out of range for u8", "oversized u8 literal", "u8 literal overflow", "too-large integer constant assigned to u8"}, "let x{n}: u8 = 4000{n};"),
			code([]string{"a match with no arms", "empty match expression", "match statement without arms", "zero-arm match"}, "match x{n} {}"),
			code([]string{"a recursive type alias", "self-referential type alias", "type alias that refers to itself", "cyclic type alias"}, "type T{n} = Vec<T{n}>;"),
			code([]string{"an invalid unicode escape in a string", "out-of-range \\u escape", "string literal with a bad \\u{} escape", "unicode escape above 10FFFF"}, `let s{n} = "\u{110000}";`),
			code([]string{"deeply nested generic bounds", "generic bound nested 30 levels", "trait bound with nested generics", "nested generic parameters in a fn signature"}, "fn f{n}<T: A<A<A<A<A<A<A<A<A<A<u8>>>>>>>>>>>() {}"),
			code([]string{"an unterminated block comment", "block comment without closing */", "unclosed /* comment", "comment that never ends"}, "/* comment {n}"),
			code([]string{"a huge array length", "array type with 99999999999 elements", "oversized array repeat expression", "giant array literal length"}, "let a{n} = [0u8; 99999999999];"),
			code([]string{"division by zero in a const", "const initializer dividing by zero", "1 / 0 in a constant", "constant expression with a zero divisor"}, "const C{n}: u32 = 1 / 0;"),
			code([]string{"a fn with an empty body that returns u32", "missing return value in a typed fn", "function body without a tail expression", "empty body for a fn returning a value"}, "fn f{n}() -> u32 {}"),
			code([]string{"a closure capturing an undefined variable", "closure that uses an unknown name", "undefined variable inside a lambda", "closure referencing a missing binding"}, "let f{n} = |x| x + y{n};"),
			code([]string{"a struct with a duplicate field", "duplicated field name in a struct", "struct declaring the same field twice", "repeated struct field"}, "struct D{n} { a: u8, a: u8 }"),
			code([]string{"break with a label outside any loop", "labelled break outside a loop", "break 'outer with no enclosing loop", "stray labelled break"}, "break 'outer{n};"),
			code([]string{"a negative constant array index", "array indexed with -1", "negative index into an array literal", "indexing an array at minus one"}, "let v{n} = [1, 2, 3][-1];"),
			code([]string{"an attribute on a let statement", "#[inline] on a local binding", "attribute applied to a statement", "misplaced inline attribute"}, "#[inline] let z{n} = 1;"),
			code([]string{"a trait with a recursive default method", "default method calling itself", "self-recursive trait method", "trait default fn recursing forever"}, "trait R{n} { fn r(&self) { self.r() } }"),
			code([]string{"an impl for an unknown type", "impl block on a missing type", "implementation for an undefined struct", "impl of a type that does not exist"}, "impl Missing{n} {}"),
			code([]string{"a macro that expands to itself", "self-recursive macro", "macro_rules with infinite expansion", "recursive macro invocation"}, "macro_rules! m{n} { () => { m{n}!() } } m{n}!();"),
			code([]string{"a string literal with 70000 characters", "very long string constant", "huge string literal", "string constant over 64 KiB"}, `let s{n} = "{long}";`),
			code([]string{"shadowing the print builtin", "a local named print that is then called", "redefining print as an integer", "print used after being shadowed"}, `let print = {n}; print("x");`),
			code([]string{"a tuple index past its arity", "out-of-bounds tuple field .5", "tuple field access beyond its length", "invalid tuple index"}, "let t{n} = (1, 2); t{n}.5;"),
		},
		problems: []problem{
			{name: "panic", sev: "high", phrases: []string{"compile panic on {S}", "compiler panics on {S}", "{S} makes the compiler panic", "panic in the compiler when compiling {S}", "qa_compile crashed (panic) for {S}"}, suffixes: commonSuffixes},
			{name: "hang", sev: "high", phrases: []string{"compiler hangs on {S}", "compiling {S} never finishes", "{S} makes the compiler hang", "qa_compile timed out on {S}"}, suffixes: []string{"", " (timeout after 30s)", ".", "; killed after the deadline"}},
			{name: "accepts", sev: "medium", phrases: []string{"compiler accepts {S}, which must be rejected", "{S} compiles but should be an error", "invalid program accepted: {S}", "no error reported for {S}"}, suffixes: []string{"", ".", " — should fail to compile"}},
			{name: "stack", sev: "critical", phrases: []string{"stack overflow in the compiler on {S}", "{S} overflows the compiler stack", "compiler process dies (stack overflow) compiling {S}", "SIGSEGV from stack exhaustion on {S}"}, suffixes: []string{"", ".", "; the whole worker restarts"}},
			{name: "diag", sev: "low", phrases: []string{"misleading error message for {S}", "error for {S} points at the wrong line", "confusing diagnostic on {S}", "wrong error text when compiling {S}"}, suffixes: []string{"", ".", " (cosmetic)"}},
		},
	}
}

func registryVocab() surfaceVocab {
	pub := func(phrases []string, args ...arg) subject {
		return subject{phrases: phrases, tool: "qa_publish", args: args}
	}
	ch := func(phrases []string, method string) subject {
		return subject{phrases: phrases, tool: "qa_chain", args: []arg{{key: "method", value: method}, {key: "params", value: `{"name":"{name}"}`, object: true}}}
	}
	return surfaceVocab{
		surface: "registry",
		sources: []string{"qa-smoke", "qa-security"},
		subjects: []subject{
			ch([]string{"release of a name by a non-owner", "releasing someone else's name", "release() called from a fresh key", "name release without ownership"}, "release_as_stranger"),
			ch([]string{"ownerOf after release", "owner lookup of a released name", "ownerOf on a name that was just released", "stale owner after release"}, "owner_of"),
			pub([]string{"setMetadata with a 70 KB value", "oversized metadata value", "metadata write larger than 64 KiB", "huge setMetadata payload"}, arg{key: "name", value: "{name}"}, arg{key: "source", value: "fn main() {}"}, arg{key: "metadata_bytes", value: "70000", number: true}),
			ch([]string{"register with an uppercase name", "a name with capital letters", "mixed-case name registration", "registering QA-NAME in caps"}, "register_upper"),
			ch([]string{"register with an empty name", "registering the empty string", "empty name registration", "zero-length name"}, "register_empty"),
			pub([]string{"publishing an artifact of 24 KB", "publish of a 24 KB compiled artifact", "a large artifact publish", "artifact near the contract size limit"}, arg{key: "name", value: "{name}"}, arg{key: "source", value: "{long}"}),
			ch([]string{"register of a name that is already taken", "double registration of one name", "registering a taken name", "second register() on the same name"}, "register_twice"),
			ch([]string{"metadata read of a missing key", "metadata() for an unset key", "reading metadata that was never set", "missing metadata key lookup"}, "metadata_missing"),
			ch([]string{"transfer of a name to the zero address", "sending a name to 0x0", "transfer to the null address", "name transfer to address zero"}, "transfer_zero"),
			ch([]string{"names with a trailing dot", "register of `name.`", "a dotted name registration", "trailing-dot names"}, "register_dot"),
		},
		problems: []problem{
			{name: "succeeds", sev: "critical", phrases: []string{"{S} succeeds but must revert", "registry allows {S}", "{S} is not rejected by the registry", "no revert on {S}"}, suffixes: []string{"", ".", " — anyone can do this"}},
			{name: "wrongrevert", sev: "low", phrases: []string{"{S} reverts with the wrong error", "unexpected revert reason for {S}", "{S} fails with a generic revert instead of a custom error", "registry gives an unhelpful revert for {S}"}, suffixes: []string{"", ".", " (Error(string) instead of NameTaken)"}},
			{name: "gas", sev: "medium", phrases: []string{"out of gas on {S}", "{S} runs out of gas", "gas estimate too low for {S}", "{S} needs more gas than estimated"}, suffixes: []string{"", ".", " — estimate off by ~30%"}},
			{name: "noevent", sev: "medium", phrases: []string{"no event emitted for {S}", "{S} emits no log", "missing event on {S}", "indexers miss {S}: no event"}, suffixes: []string{"", "."}},
		},
	}
}

func chainVocab() surfaceVocab {
	call := func(phrases []string, data string) subject {
		return subject{phrases: phrases, tool: "qa_chain", args: []arg{{key: "method", value: "eth_call"}, {key: "params", value: `{"to":"{addr}","data":"` + data + `"}`, object: true}}}
	}
	return surfaceVocab{
		surface: "chain",
		sources: []string{"qa-security", "qa-smoke"},
		subjects: []subject{
			call([]string{"adminResetAll() from a fresh address", "the adminResetAll selector", "calling adminResetAll as a stranger", "admin reset by an unprivileged key"}, "0x8f1c2a3b"),
			call([]string{"adminBurn(string[]) from a fresh address", "the adminBurn selector", "calling adminBurn as a stranger", "admin burn by an unprivileged key"}, "0x4e7a9d10"),
			call([]string{"transferOwnership from a fresh address", "the transferOwnership selector", "ownership transfer by a stranger", "calling transferOwnership unprivileged"}, "0xf2fde38b"),
			call([]string{"upgradeTo from a fresh address", "the upgradeTo selector", "proxy upgrade by a stranger", "calling upgradeTo unprivileged"}, "0x3659cfe6"),
			{phrases: []string{"feedbackRange with count 0", "an empty feedback_range page", "feedback_range(start, 0)", "zero-length range read"}, tool: "qa_chain", args: []arg{{key: "method", value: "feedback_range"}, {key: "params", value: `{"start":{n},"count":0}`, object: true}}},
			{phrases: []string{"feedbackRange past the end", "feedback_range beyond the count", "range read after the last entry", "out-of-range feedback page"}, tool: "qa_chain", args: []arg{{key: "method", value: "feedback_range"}, {key: "params", value: `{"start":9999{n},"count":50,"past":"end"}`, object: true}}},
		},
		problems: []problem{
			{name: "callable", sev: "critical", phrases: []string{"{S} does not revert", "eth_call of {S} succeeds", "{S} is callable: admin function unprotected", "access control missing: {S}"}, suffixes: []string{"", ".", " — must revert for non-owners"}},
			{name: "wrongdata", sev: "high", phrases: []string{"{S} returns wrong data", "wrong result from {S}", "{S} gives corrupted output", "bad return data for {S}"}, suffixes: []string{"", "."}},
		},
	}
}

func callVocab() surfaceVocab {
	msg := func(phrases []string, message string) subject {
		return subject{phrases: phrases, tool: "qa_call", args: []arg{{key: "target", value: "{name}"}, {key: "message", value: message}}}
	}
	return surfaceVocab{
		surface: "call",
		sources: []string{"qa-smoke", "qa-security", "qa-ux"},
		subjects: []subject{
			msg([]string{"a plain greeting", "the message hello", "a simple hello", "saying hi to the agent"}, "hello {n}"),
			msg([]string{"a spoofed X-Identity header", "a forged identity", "impersonating another caller", "a request claiming to be the owner"}, "as-owner: transfer {name}"),
			msg([]string{"a malformed JSON body", "a truncated JSON request", "broken JSON in the request body", "invalid request JSON"}, "{\"a\":"),
			msg([]string{"a 100 KB message", "an oversized message", "a very long prompt", "message above the size limit"}, "{long}"),
			msg([]string{"an empty message", "a zero-length message", "no message text", "blank input"}, ""),
			msg([]string{"a message with a null byte", "NUL characters in the message", "a message containing \\u0000", "embedded null in input"}, "a\u0000b {n}"),
		},
		problems: []problem{
			{name: "empty", sev: "medium", phrases: []string{"empty reply to {S}", "agent returns nothing for {S}", "{S} gets an empty response", "no reply text for {S}"}, suffixes: []string{"", ".", " (status 200)"}},
			{name: "500", sev: "medium", phrases: []string{"HTTP 500 on {S}", "server error for {S}", "{S} crashes the call endpoint", "internal error answering {S}"}, suffixes: []string{"", ".", " — expected a 4xx"}},
			{name: "trace", sev: "high", phrases: []string{"stack trace leaked in the reply to {S}", "reply to {S} exposes a stack trace", "internal file paths leaked for {S}", "{S} reveals server internals in the error"}, suffixes: []string{"", ".", " (goroutine dump)"}},
			{name: "accepts", sev: "critical", phrases: []string{"call endpoint accepts {S}", "{S} is honored by the agent", "identity not checked: {S} works", "{S} is accepted without verification"}, suffixes: []string{"", ".", " — auth bypass"}},
		},
	}
}

func faceVocab() surfaceVocab {
	fetch := func(phrases []string, path string) subject {
		return subject{phrases: phrases, tool: "qa_fetch", args: []arg{{key: "url", value: "https://{name}.app.test" + path}}}
	}
	return surfaceVocab{
		surface: "face",
		sources: []string{"qa-security", "qa-ux", "qa-smoke"},
		subjects: []subject{
			fetch([]string{"the search page", "/search?q=", "the search results page", "search with a canary query"}, "/search?q=canary{n}"),
			fetch([]string{"the profile page", "/profile", "a user's profile page", "the profile view"}, "/profile"),
			fetch([]string{"the landing page", "/", "the app's front page", "the index page"}, "/"),
			fetch([]string{"the config.js asset", "/config.js", "the client config script", "config.js"}, "/config.js"),
			fetch([]string{"the login form", "/login", "the sign-in page", "the login view"}, "/login"),
		},
		problems: []problem{
			{name: "xss", sev: "critical", phrases: []string{"canary reflected unescaped on {S}", "{S} reflects input without escaping", "XSS: {S} echoes the query raw", "unescaped reflection of user input on {S}"}, suffixes: []string{"", ".", " (<script> survives)"}},
			{name: "csp", sev: "medium", phrases: []string{"no Content-Security-Policy header on {S}", "{S} is served without CSP", "missing CSP on {S}", "CSP header absent for {S}"}, suffixes: []string{"", "."}},
			{name: "cors", sev: "high", phrases: []string{"CORS allows any origin with credentials on {S}", "{S} sends Access-Control-Allow-Origin: * with credentials", "wildcard CORS on {S}", "permissive CORS policy for {S}"}, suffixes: []string{"", "."}},
			{name: "secret", sev: "critical", phrases: []string{"private key exposed in {S}", "{S} leaks a private key", "secret key material visible in {S}", "hex private key found in {S}"}, suffixes: []string{"", ".", " — rotate now"}},
			{name: "slowface", sev: "low", phrases: []string{"{S} takes {n} ms to render", "slow render of {S} ({n}ms)", "{S} is slow: {n} ms", "render time of {S} above budget ({n} ms)"}, suffixes: []string{"", "."}},
		},
	}
}

func docsVocab() surfaceVocab {
	doc := func(phrases []string) subject { return subject{phrases: phrases} }
	return surfaceVocab{
		surface: "docs",
		sources: []string{"qa-ux"},
		subjects: []subject{
			doc([]string{"the /docs/publish link in llms.txt", "llms.txt link to /docs/publish", "/docs/publish referenced from llms.txt", "publish docs link (llms.txt)"}),
			doc([]string{"the /docs/metadata link in skill.md", "skill.md link to /docs/metadata", "/docs/metadata referenced from skill.md", "metadata docs link (skill.md)"}),
			doc([]string{"the quickstart link in README", "README link to the quickstart", "quickstart referenced from the readme", "readme quickstart link"}),
			doc([]string{"the status code table in skill.md", "skill.md's table of status codes", "the documented status codes", "status code docs in skill.md"}),
			doc([]string{"the rate limit section of the API docs", "API docs on rate limits", "documented rate limits", "the rate-limit paragraph"}),
			doc([]string{"the example in /docs/call", "/docs/call's code sample", "the call endpoint example", "sample request in the call docs"}),
		},
		problems: []problem{
			{name: "dead", sev: "low", phrases: []string{"dead link: {S} returns 404", "{S} is a dead link (404)", "404 for {S}: dead link", "broken link {S} (404)"}, suffixes: []string{"", "."}},
			{name: "stale", sev: "info", phrases: []string{"{S} is out of date", "outdated content in {S}", "{S} is stale and out of date", "{S} describes outdated behaviour"}, suffixes: []string{"", ".", " (since the last release)"}},
			{name: "contradict", sev: "low", phrases: []string{"{S} contradicts the API's actual responses", "the API's responses contradict {S}", "{S} documents responses the API contradicts", "contradiction between {S} and the API's responses"}, suffixes: []string{"", "."}},
		},
	}
}

func perfVocab() surfaceVocab {
	m := func(phrases []string) subject { return subject{phrases: phrases} }
	return surfaceVocab{
		surface: "perf",
		sources: []string{"qa-perf"},
		subjects: []subject{
			m([]string{"the call endpoint", "agent calls", "POST /call", "the call API"}),
			m([]string{"register transactions", "registry register() calls", "the register path", "register() round trips"}),
			m([]string{"artifact publish", "publish transactions", "qa_publish round trips", "the publish path"}),
			m([]string{"feedback reads", "feedback_range pages", "reading the feedback log", "feedback log page reads"}),
			m([]string{"compiles of large sources", "compile of big inputs", "qa_compile on large files", "compiler throughput on big sources"}),
			m([]string{"face page loads", "fetching app faces", "face rendering", "GET of a face"}),
		},
		problems: []problem{
			{name: "p95", sev: "medium", phrases: []string{"p95 latency of {S} is {n}ms, above the SLO", "{S}: p95 latency {n} ms exceeds the 500 ms SLO", "slow {S}: p95 latency at {n}ms, SLO breached", "latency SLO breach on {S} (p95 {n}ms)"}, suffixes: []string{"", "."}},
			{name: "gasdrift", sev: "low", phrases: []string{"gas used by {S} exceeds the estimate by {n}%", "{S} uses {n}% more gas than estimated", "gas estimate off for {S} ({n}% more used)", "{S}: gas used vs estimate differs by {n}%"}, suffixes: []string{"", "."}},
			{name: "growth", sev: "medium", phrases: []string{"{S} time grows quadratically with input size", "{S} gets quadratically slower as input size grows", "{S} scales quadratically: 2x input size, 4x time", "quadratic slowdown of {S} as input size grows"}, suffixes: []string{"", "."}},
		},
	}
}

// noise is what humans write to a permissionless log: free-form, mostly not
// about a bug. {n} and {who} vary.
var noise = []string{
	"gm", "gm gm", "hello from {who}", "test", "testing 1 2 3", "nice work team",
	"is anyone reading this?", "the site feels slow today", "first!", "{who} was here",
	"can someone add dark mode", "love the new face editor", "why is my name taken??",
	"please add a way to export my data", "lol", "ping", "how do I publish an app?",
	"thanks for fixing the login thing", "wen token", "block {n} looks stuck to me",
	"deployed my first app today 🎉", "docs are confusing for beginners",
	"my app {who}-{n} is not loading", "great project, keep going",
	"<script>alert(1)</script>", "[click here](http://evil.example/phish)",
	"| table | injection |", "buy cheap tokens at www.spam.example",
}

var people = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar", "peggy", "trent", "victor", "walter"}

// extra header keys some probes add; triage must ignore them.
var extraKeys = []string{"dur=12ms", "v=2", "host=node-3", "model=playbook", "attempt=2"}
