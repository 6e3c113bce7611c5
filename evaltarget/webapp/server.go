package webapp

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
)

// Planted values. The live key is a made-up one in Stripe's format; the
// publishable key of the twin is public by design.
const (
	leakedStripeKey = "sk_live_51Hb7qLx9Vf3kP2mNc8dR4tYwZ6aE0sQ"
	publishableKey  = "pk_live_51Hb7qLx9Vf3kP2mNc8dR4tYwZ6aE0sQ"
	exampleTxHash   = "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	maxCallBody     = 64 << 10
)

func (a *App) flawed() bool { return a.cfg.Mode == Flawed }

func (a *App) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.index)
	mux.HandleFunc("GET /about", a.page("About Bazaar", "<p>Bazaar lists independent shops. Each shop is a name in an on-chain registry.</p>"))
	mux.HandleFunc("GET /search", a.search)
	mux.HandleFunc("GET /view", a.face)
	mux.HandleFunc("GET /robots.txt", a.robots)
	mux.HandleFunc("GET /sitemap.xml", a.sitemap)
	mux.HandleFunc("GET /llms.txt", a.llms)
	mux.HandleFunc("GET /static/app.3f9c.js", a.bundle)
	mux.HandleFunc("GET /static/analytics.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, "window.bazaarAnalytics = function () {};\n")
	})
	mux.HandleFunc("GET /static/config.json", a.config)
	mux.HandleFunc("GET /static/site.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		io.WriteString(w, "body{font-family:sans-serif}nav{margin-bottom:1em}\n")
	})
	mux.HandleFunc("GET /internal/status", a.status)
	mux.HandleFunc("GET /docs/{$}", a.docsIndex)
	mux.HandleFunc("GET /docs/quickstart.md", a.quickstart)
	mux.HandleFunc("GET /docs/api.html", a.apiReference)
	mux.HandleFunc("GET /docs/guides/agents/intro.html", a.page("Agents: introduction", `<p>Every shop has an agent. Start with the <a href="setup.html">setup guide</a>.</p>`))
	mux.HandleFunc("GET /docs/guides/agents/setup.html", a.setupGuide)
	api := http.NewServeMux()
	api.HandleFunc("GET /api/v2/catalog", a.catalog)
	api.HandleFunc("GET /api/v2/items/{id}", a.item)
	api.HandleFunc("GET /api/v2/stats", a.stats)
	api.HandleFunc("GET /api/v2/health", a.health)
	api.HandleFunc("GET /api/v2/orders", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required"})
	})
	api.HandleFunc("POST /api/v2/agents/call", a.call)
	api.HandleFunc("/api/v2/agents/call", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use POST"})
	})
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
	})
	mux.Handle("/api/", a.cors(api))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "<!doctype html><title>Not found</title><p>Page %s not found. <a href=\"/\">Home</a></p>", html.EscapeString(r.URL.Path))
	})
	return a.headers(mux)
}

// headers sets the security headers. FLAW (headers): the flawed platform
// sends none on its HTML pages.
func (a *App) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.flawed() {
			h := w.Header()
			h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// cors is the API's CORS policy. FLAW (cors): the flawed API reflects any
// Origin with credentials and passes every preflight; the twin shares its
// public API with everyone, without credentials (a decoy: a wildcard
// without credentials is fine).
func (a *App) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		origin := r.Header.Get("Origin")
		switch {
		case a.flawed() && origin != "":
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Vary", "Origin")
		case !a.flawed():
			h.Set("Access-Control-Allow-Origin", "*")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST")
			h.Set("Access-Control-Allow-Headers", "Content-Type")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// layout wraps a page body in the site's HTML.
func (a *App) layout(title, body string) string {
	return fmt.Sprintf(`<!doctype html>
<html><head><meta charset="utf-8"><title>%s · Bazaar</title>
<link rel="stylesheet" href="/static/site.css?v=2"></head>
<body><nav><a href="/">Bazaar</a> · <a href="/docs/">Docs</a> · <a href="/about">About</a></nav>
<main>%s</main></body></html>
`, html.EscapeString(title), body)
}

func (a *App) page(title, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, a.layout(title, body))
	}
}

// index is the home page. FLAW (mixed content): the flawed page loads its
// analytics script over plain HTTP.
func (a *App) index(w http.ResponseWriter, r *http.Request) {
	analytics := "/static/analytics.js"
	if a.flawed() {
		analytics = "http://" + a.host + "/static/analytics.js"
	}
	var shops strings.Builder
	for _, s := range Shops {
		fmt.Fprintf(&shops, `<li><a href="/view?shop=%s">%s</a></li>`, s.Name, html.EscapeString(s.Title))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, a.layout("Shops", fmt.Sprintf(`<h1>Shops</h1><ul>%s</ul>
<form action="/search" method="get"><input name="q" placeholder="Find a shop"><button>Search</button></form>
<script src="/static/app.3f9c.js"></script><script src="%s"></script>`, shops.String(), analytics)))
}

func (a *App) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	var hits strings.Builder
	for _, s := range Shops {
		if q == "" || strings.Contains(strings.ToLower(s.Title), strings.ToLower(q)) {
			fmt.Fprintf(&hits, `<li><a href="/view?shop=%s">%s</a></li>`, s.Name, html.EscapeString(s.Title))
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, a.layout("Search", fmt.Sprintf("<h1>Results for %q</h1><ul>%s</ul>", html.EscapeString(q), hits.String())))
}

// face renders a shop's metadata, escaped, from the registry.
func (a *App) face(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("shop")
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	owner, err := a.reg.OwnerOf(ctx, name)
	if err != nil {
		http.Error(w, "registry unavailable", http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if owner.IsZero() {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, a.layout("No such shop", "<p>There is no shop by that name.</p>"))
		return
	}
	title, _ := a.reg.Metadata(ctx, name, chain.MetadataKey("title"))
	tagline, _ := a.reg.Metadata(ctx, name, chain.MetadataKey("tagline"))
	io.WriteString(w, a.layout(string(title), fmt.Sprintf(`<h1>%s</h1><p class="tagline">%s</p><p>Owner %s. <a href="/search?q=%s">Similar shops</a></p>`,
		html.EscapeString(string(title)), html.EscapeString(string(tagline)), owner, html.EscapeString(name))))
}

func (a *App) robots(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "User-agent: *\nDisallow: /internal/\nDisallow: /search?*\nSitemap: %s/sitemap.xml\n", a.srv.URL)
}

func (a *App) sitemap(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, p := range []string{"/", "/about", "/docs/", "/docs/api.html", "/internal/status"} {
		fmt.Fprintf(w, "<url><loc>%s%s</loc></url>", a.srv.URL, p)
	}
	io.WriteString(w, "</urlset>\n")
}

func (a *App) llms(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, `# Bazaar

> A directory of independent shops. Each shop is a name in an on-chain
> registry; its page lives at %[1]s/view?shop={shop}.

## Reference

- [Quickstart](/docs/quickstart.md): first calls with curl
- [API reference](%[1]s/docs/api.html): endpoints, fields and formats
- [Agents](docs/guides/agents/intro.html): talking to a shop's agent
`, a.srv.URL)
}

// bundle is the site's script: it holds the API's URLs.
func (a *App) bundle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/javascript")
	io.WriteString(w, `(function(){"use strict";
var API="/api/v2",CONFIG_URL="/static/config.json";
function get(u){return fetch(u,{credentials:"include"}).then(function(r){return r.json()})}
function user(id){return get(`+"`/api/v2/users/${id}`"+`)}
get(CONFIG_URL).then(function(c){window.bazaar=c});
get("/api/v2/catalog?page=1");get('/api/v2/stats');
var mime="text/html",re=/\/[a-z]+\//;
})();
`)
}

// config is the bundle's configuration. FLAW (secrets): the flawed one
// holds the live payment secret key; the twin only the publishable key.
func (a *App) config(w http.ResponseWriter, r *http.Request) {
	pay := map[string]string{"provider": "stripe", "publishable_key": publishableKey}
	if a.flawed() {
		pay["secret_key"] = leakedStripeKey
	}
	writeJSON(w, http.StatusOK, map[string]any{"env": "production", "payments": pay, "support": "/about"})
}

// status is the internal status page the sitemap lists. FLAW (leak on a
// 200 page): the flawed one shows the panic of a failed health probe.
func (a *App) status(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if a.flawed() {
		io.WriteString(w, a.layout("Status", `<h1>Status: degraded</h1><pre>probe store: panic: runtime error: invalid memory address or nil pointer dereference
goroutine 7 [running]:
main.(*Store).Get(0x0, {0xc000012345, 0x4})
	/srv/bazaar/store.go:212 +0x1d
main.probe()
	/srv/bazaar/health.go:40 +0x6a</pre>`))
		return
	}
	io.WriteString(w, a.layout("Status", "<h1>Status: all systems nominal</h1>"))
}

func (a *App) docsIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, a.layout("Docs", `<h1>Docs</h1><ul>
<li><a href="quickstart.md">Quickstart</a></li>
<li><a href="api.html">API reference</a></li>
<li><a href="guides/agents/intro.html">Agents</a></li></ul>`))
}

// setupGuide exists only on the twin. FLAW (dead link): the flawed
// platform's quickstart and agents guide link it, and it answers 404.
func (a *App) setupGuide(w http.ResponseWriter, r *http.Request) {
	if a.flawed() {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, a.layout("Not found", "<p>This guide has moved.</p>"))
		return
	}
	a.page("Agents: setup", "<p>Pick a shop, then call its agent (see the API reference).</p>")(w, r)
}

// quickstart is markdown with curl examples and decoys: a placeholder key
// and a transaction hash, neither of them a secret.
func (a *App) quickstart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	fmt.Fprintf(w, "# Quickstart\n\n"+
		"Set your key first (the examples use a placeholder):\n\n"+
		"    export BAZAAR_API_KEY=your-api-key-here\n\n"+
		"Check the service is up:\n\n"+
		"```\n$ curl %[1]s/api/v2/health\n{\"status\": \"ok\"}\n```\n\n"+
		"Browse the catalogue page by page with `GET /api/v2/catalog?page=N`.\n\n"+
		"Shops are registered on chain; the registration of acme was transaction `%[2]s`.\n\n"+
		"Next: [set up an agent](guides/agents/setup.html) or read the [API reference](api.html).\n",
		a.srv.URL, exampleTxHash)
}

// apiReference documents the API as an HTML table and prose.
func (a *App) apiReference(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, a.layout("API reference", `<h1>API reference</h1>
<table>
<tr><th>Verb</th><th>Endpoint</th><th>Response</th><th>Fields</th></tr>
<tr><td>GET</td><td><code>/api/v2/catalog?page=1</code></td><td>JSON</td><td><code>items</code>, <code>next</code></td></tr>
<tr><td>GET</td><td><code>/api/v2/items/17</code></td><td>JSON</td><td><code>id</code>, <code>name</code>, <code>price</code></td></tr>
</table>
<h2>Health</h2>
<p>The <code>/api/v2/health</code> endpoint returns JSON with a <code>status</code> field.</p>
<h2>Orders</h2>
<p>GET /api/v2/orders lists your orders; it needs a bearer token and answers 401 without one.</p>
<h2>Agents</h2>
<p>To talk to a shop's agent, send a POST request to <code>/api/v2/agents/call</code> with the JSON body {"target": "acme", "message": "hi"}. It responds with JSON containing <code>reply</code>.</p>`))
}

// catalog pages through the shops' items. FLAW (docs contract): the docs
// promise the field items; the flawed API answers results.
func (a *App) catalog(w http.ResponseWriter, r *http.Request) {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	key := "items"
	if a.flawed() {
		key = "results"
	}
	switch page {
	case 0, 1:
		writeJSON(w, http.StatusOK, map[string]any{key: []map[string]any{
			{"id": 17, "href": "/api/v2/items/17"}, {"id": 42, "href": "/api/v2/items/42"},
		}, "next": "/api/v2/catalog?page=2"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{key: []map[string]any{{"id": 999, "href": "/api/v2/items/999"}}, "next": nil})
	}
}

// item answers one item. Item 999 was deleted but is still listed. FLAW
// (leak on an error answer): the flawed API answers it with a traceback.
func (a *App) item(w http.ResponseWriter, r *http.Request) {
	switch id := r.PathValue("id"); id {
	case "17", "42":
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "name": "Anvil model " + id, "price": 120})
	default:
		if a.flawed() {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "Traceback (most recent call last):\n  File \"/opt/bazaar/api/items.py\", line 58, in get_item\n    return ITEMS[int(item_id)]\nKeyError: %s\n", id)
			return
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such item"})
	}
}

// stats is JSON. FLAW (content type): the flawed API labels it text/html.
func (a *App) stats(w http.ResponseWriter, r *http.Request) {
	if a.flawed() {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `{"shops": %d, "items": 3}`, len(Shops))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"shops": len(Shops), "items": 3})
}

// health answers whether the API is up. FLAW (docs contract): the docs
// promise JSON with a status field; the flawed API answers plain text.
func (a *App) health(w http.ResponseWriter, r *http.Request) {
	if a.flawed() {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// call is the agent-call endpoint: POST {"target","message"} -> {"reply"}.
// FLAWS (call grammar), on the flawed platform only:
//   - a message that is not a string crashes the handler: HTTP 500 with a
//     Node-style stack trace and file path;
//   - a message over 8 KB: HTTP 500 "internal error";
//   - a whitespace-only message: HTTP 200 with an empty reply;
//   - a body nested deeper than 64 levels: the validator never returns (a
//     hang, answered after Config.CallTimeout or when the client leaves).
//
// The twin answers each of these with a clean 400.
func (a *App) call(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallBody))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "body too large"})
		return
	}
	if depth(body) > 64 {
		if a.flawed() {
			a.hang(r)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "timeout"})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body nested too deeply"})
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "send application/json"})
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil || req == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be a JSON object"})
		return
	}
	target, ok := req["target"].(string)
	if !ok || target == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "target must be a non-empty string"})
		return
	}
	raw, present := req["message"]
	message, isString := raw.(string)
	switch {
	case !present || raw == nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "message is required"})
		return
	case !isString && a.flawed():
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "TypeError: message.trim is not a function\n    at handleCall (/srv/bazaar/agents.js:88:23)\n    at Layer.handle (/srv/bazaar/node_modules/express/lib/router/layer.js:95:5)\n")
		return
	case !isString:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "message must be a string"})
		return
	case len(message) > 8<<10 && a.flawed():
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case len(message) > 8<<10:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "message longer than 8 KB"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	owner, err := a.reg.OwnerOf(ctx, target)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]string{"error": "registry unavailable"})
		return
	}
	if owner.IsZero() {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "unknown shop"})
		return
	}
	switch trimmed := strings.TrimSpace(message); {
	case trimmed == "" && message != "" && a.flawed():
		writeJSON(w, http.StatusOK, map[string]string{"reply": ""})
	case trimmed == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "message is empty"})
	default:
		title, _ := a.reg.Metadata(ctx, target, chain.MetadataKey("title"))
		writeJSON(w, http.StatusOK, map[string]string{"reply": fmt.Sprintf("%s here. You said %d characters.", title, len([]rune(message)))})
	}
}

// hang waits until the request or the app ends, or CallTimeout.
func (a *App) hang(r *http.Request) {
	t := time.NewTimer(a.cfg.CallTimeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-a.ctx.Done():
	}
}

// depth is the deepest bracket nesting in a JSON text, strings skipped.
func depth(b []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}
