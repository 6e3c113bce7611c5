package testbed

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/common"
)

// Planted latencies (flaws P2 and P3): both exceed SLO.
const (
	slowCallDelay = 800 * time.Millisecond // every call to Alice's agent
	slowFaceDelay = 700 * time.Millisecond // every view of Bob's face
)

// maxCallBody caps a /call request body.
const maxCallBody = 64 << 10

// chainTimeout bounds the chain reads of one request.
const chainTimeout = 5 * time.Second

func (t *Testbed) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", t.index)
	mux.HandleFunc("GET /llms.txt", t.llmsTxt)
	mux.HandleFunc("GET /skill.md", t.skillMD)
	mux.HandleFunc("GET /.env", t.dotEnv)
	mux.HandleFunc("GET /{name}/{$}", t.face)
	// PLANTED FLAW U3: skill.md documents GET /call, but only POST is served.
	// (Without the catch-all the mux would redirect GET /call to the face of
	// a name "call".)
	mux.HandleFunc("POST /call", t.call)
	mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	})
	return t.cors(t.recoverWithStack(mux))
}

// cors is PLANTED FLAW S5: it reflects any Origin with credentials allowed,
// answers every preflight, and no response carries security headers (no
// Content-Security-Policy, X-Content-Type-Options or X-Frame-Options).
func (t *Testbed) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			origin = "*"
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "*")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recoverWithStack is PLANTED FLAW F3's other half: a handler panic becomes
// a 500 whose body is the panic value and the goroutine's stack trace.
func (t *Testbed) recoverWithStack(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p) // net/http's way to abort a response; not ours to report
			}
			t.log.Warn("handler panic", "path", r.URL.Path, "panic", fmt.Sprint(p))
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "panic: %v\n\n%s", p, debug.Stack())
		}()
		next.ServeHTTP(w, r)
	})
}

// sleep waits d, or less if the request or the testbed ends first.
func (t *Testbed) sleep(r *http.Request, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-r.Context().Done():
	case <-t.ctx.Done():
	}
}

func (t *Testbed) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html>
<html><head><title>testbed</title></head>
<body>
<h1>testbed</h1>
<p>A tiny on-chain app platform. Names live in the registry at <code>%s</code>.</p>
<ul>
<li><a href="/%s/">%s</a></li>
<li><a href="/%s/">%s</a></li>
</ul>
<p>For agents: <a href="/llms.txt">llms.txt</a>, <a href="/skill.md">skill.md</a>.</p>
</body></html>
`, t.Registry(), Alice, Alice, Bob, Bob)
}

// faceFileName is the shape of a name the static face fallback will look up;
// anything else cannot be a file name inside FacesDir.
var faceFileName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$`)

// face renders a name's on-chain metadata as its public page.
//
// PLANTED FLAW S1: metadata values are written into the page unescaped, so
// the face is stored XSS for anyone who can set a name's metadata.
// PLANTED FLAW U1: a name not on chain gets a 404 page holding the raw os
// error of the static-face fallback, file path included.
// PLANTED FLAW P3: Bob's face is rendered after a planted sleep.
func (t *Testbed) face(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), chainTimeout)
	defer cancel()
	owner, err := t.reg.ownerOf(ctx, name)
	if err != nil {
		t.chainError(w, r, err)
		return
	}
	if owner == (common.Address{}) {
		t.staticFace(w, r, name)
		return
	}
	keys, err := t.reg.metadataKeys(ctx, name)
	if err != nil {
		t.chainError(w, r, err)
		return
	}
	var title, face string
	var extra strings.Builder
	for _, k := range keys {
		v, err := t.reg.metadata(ctx, name, k)
		if err != nil {
			t.chainError(w, r, err)
			return
		}
		switch {
		case len(v) == 0:
			// unset since, or set before the name was released
		case k == KeyTitle:
			title = string(v)
		case k == KeyFace:
			face = string(v)
		case utf8.Valid(v):
			fmt.Fprintf(&extra, "<section data-key=\"%s\">%s</section>\n", k.Hex(), v)
		default:
			fmt.Fprintf(&extra, "<section data-key=\"%s\"><pre>%d bytes: %s</pre></section>\n", k.Hex(), len(v), hex.EncodeToString(v))
		}
	}
	if title == "" {
		title = html.EscapeString(name)
	}
	if face == "" && extra.Len() == 0 {
		face = "<p>" + html.EscapeString(name) + " has not published a face yet.</p>"
	}
	if name == Bob {
		t.sleep(r, slowFaceDelay)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html>\n<html><head><title>%s</title></head>\n<body>\n%s\n%s<footer>owner %s</footer>\n</body></html>\n",
		title, face, extra.String(), owner.Hex())
}

// staticFace serves FacesDir/<name>.html for a name that is not on chain;
// the 404 for a missing file leaks the os error (flaw U1).
func (t *Testbed) staticFace(w http.ResponseWriter, r *http.Request, name string) {
	if !faceFileName.MatchString(name) || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	b, err := os.ReadFile(filepath.Join(t.cfg.FacesDir, name+".html"))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "<!doctype html>\n<html><head><title>not found</title></head>\n<body>\n<h1>404</h1>\n<pre>%s</pre>\n</body></html>\n", html.EscapeString(err.Error()))
		return
	}
	w.Write(b)
}

// chainError answers a failed chain read; this one is a clean error.
func (t *Testbed) chainError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	t.log.Warn("chain read", "path", r.URL.Path, "err", err)
	http.Error(w, "registry unavailable", http.StatusBadGateway)
}

// callRequest is the body of POST /call.
type callRequest struct {
	Target  string `json:"target"`
	Message string `json:"message"`
	From    string `json:"from"` // PLANTED FLAW S4: trusted as is
}

// call is the agent-call endpoint: POST {"target","message"} -> {"reply"}.
// Replies are a deterministic function of target, message and caller.
//
// PLANTED FLAW F3: a body that is not a JSON object of strings, or a message
// that starts with "{" but is not JSON, panics; recoverWithStack turns that
// into a 500 carrying the stack trace.
// PLANTED FLAW S4: the caller is whoever the X-Caller header or the "from"
// field says; "admin" or the registry owner's address is shown an internal
// token.
// PLANTED FLAW U4: Bob's agent answers 200 with an empty reply.
// PLANTED FLAW P2: Alice's agent answers after a planted sleep.
func (t *Testbed) call(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCallBody))
	if err := dec.Decode(&req); err != nil {
		panic(fmt.Errorf("decode call request: %w", err))
	}
	if req.Target == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "target is required"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), chainTimeout)
	defer cancel()
	owner, err := t.reg.ownerOf(ctx, req.Target)
	if err != nil {
		t.chainError(w, r, err)
		return
	}
	if owner == (common.Address{}) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "unknown target"})
		return
	}
	caller := r.Header.Get("X-Caller")
	if caller == "" {
		caller = req.From
	}
	reply := t.reply(req.Target, req.Message, caller)
	switch req.Target {
	case Alice:
		t.sleep(r, slowCallDelay)
	case Bob:
		reply = ""
	}
	writeJSON(w, http.StatusOK, map[string]string{"reply": reply})
}

// reply computes an agent's deterministic answer.
func (t *Testbed) reply(target, message, caller string) string {
	var out string
	msg := strings.TrimSpace(message)
	switch {
	case strings.HasPrefix(msg, "{"):
		// A structured message is a tool invocation: {"tool": "...", "args": {...}}.
		var inv struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal([]byte(msg), &inv); err != nil {
			panic(fmt.Errorf("decode structured message: %w", err))
		}
		out = fmt.Sprintf("%s has no tool %q.", target, inv.Tool)
	case msg == "ping":
		out = "pong"
	case msg == "help":
		out = "I understand: ping, help, whoami, echo TEXT. Anything else I acknowledge."
	case msg == "whoami":
		who := caller
		if who == "" {
			who = "anonymous"
		}
		out = "You are " + who + "."
	case strings.HasPrefix(msg, "echo "):
		out = strings.TrimPrefix(msg, "echo ")
	case msg == "":
		out = "Say something: try help."
	default:
		out = fmt.Sprintf("%s here. I got your message (%d bytes).", target, len(message))
	}
	if t.privileged(caller) {
		out = fmt.Sprintf("Admin session for %s. Internal token: %s. %s", target, t.adminToken, out)
	}
	return out
}

// privileged reports whether caller claims to be the admin or the registry owner.
func (t *Testbed) privileged(caller string) bool {
	caller = strings.TrimSpace(caller)
	return strings.EqualFold(caller, "admin") || strings.EqualFold(caller, t.owner.Hex())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// dotEnv is PLANTED FLAW S2: a deployment file with a private key, on a
// public path that llms.txt links. The key is a fresh throwaway with no funds.
func (t *Testbed) dotEnv(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "# testbed deployment settings\nRPC_URL=%s\nREGISTRY=%s\nDEPLOYER_PRIVATE_KEY=%s\n",
		t.cfg.RPC, t.Registry(), t.leakedKey)
}

func (t *Testbed) llmsTxt(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, t.expand(llmsTxt))
}

func (t *Testbed) skillMD(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	io.WriteString(w, t.expand(skillMD))
}

// expand fills the docs' placeholders.
func (t *Testbed) expand(s string) string {
	return strings.NewReplacer(
		"{{URL}}", t.url,
		"{{REGISTRY}}", t.Registry(),
		"{{ALICE}}", Alice,
		"{{BOB}}", Bob,
		"{{SLO}}", fmt.Sprint(SLO.Milliseconds()),
	).Replace(s)
}

// llmsTxt follows https://llmstxt.org. PLANTED FLAW U2: the getting-started
// link is dead. It also links /.env (flaw S2).
const llmsTxt = `# testbed

> A tiny on-chain app platform: register a name in the registry, publish a face
> (HTML in the name's metadata), talk to the name's agent, and compile TinyLang
> programs.

Every name has a public face at {{URL}}/NAME/ and an agent you can call.

## Docs

- [Skill]({{URL}}/skill.md): how an agent uses this platform (calls, faces, registry)
- [Getting started]({{URL}}/docs/getting-started): register your first name step by step

## Faces

- [{{ALICE}}]({{URL}}/{{ALICE}}/): Alice's Tea Room
- [{{BOB}}]({{URL}}/{{BOB}}/): bob's page

## Optional

- [Deployment settings]({{URL}}/.env): RPC endpoint and registry address of this deployment
`

// skillMD documents the platform for agents. PLANTED FLAW U3: it promises
// GET /call, which answers 405.
const skillMD = `# testbed skill

Use this skill to talk to the agents of names on the testbed platform.

## Call a name's agent

    GET {{URL}}/call?target={{ALICE}}&message=hello

Returns JSON: {"reply": "..."}. Agents understand ping, help, whoami and
echo TEXT. Say who is calling with "from" (or an X-Caller header) and agents
greet you by name. Every call is answered within {{SLO}} ms.

## Faces

    GET {{URL}}/NAME/

Renders the name's metadata as a page. A face is the metadata value under the
key keccak256("face") (HTML); keccak256("title") is the page title. Other keys
are shown below the face.

## Registry

The names live in an INameRegistry at {{REGISTRY}}: register(string),
release(string), ownerOf(string), setMetadata(string,bytes32,bytes),
metadata(string,bytes32). Only a name's owner may release it or set its
metadata. Admin functions (adminBurn(string[]), adminResetAll()) are for the
operator.

## Compile

Programs are written in TinyLang (.tl): let, fn, enum, print, if/else, while.
`
