package console

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/", "/runs", "/fleet", "/feed", "/login", "/api/report", "/api/runs", "/static/console.css", "/nope", "/api/nope"} {
		w := f.do("GET", p, "", nil)
		h := w.Header()
		if got := h.Get("Content-Security-Policy"); got != contentSecurityPolicy {
			t.Errorf("%s: CSP %q", p, got)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, h)
		}
	}
	if !strings.Contains(contentSecurityPolicy, "script-src 'self'") || strings.Contains(contentSecurityPolicy, "unsafe-inline") {
		t.Errorf("CSP allows inline code: %s", contentSecurityPolicy)
	}
}

func TestPagesRenderUntrustedTextAsText(t *testing.T) {
	f := newFixture(t)
	f.c.Publish(Event{Kind: KindFinding, Specialist: "security", RunID: f.runID, Severity: "high", Surface: "face", Text: xss})
	f.c.Publish(Event{Kind: KindCluster, Cluster: "bbbb2222", State: "new", Severity: "bogus", Text: xss})
	for _, p := range []string{"/", "/feed", "/clusters/bbbb2222", "/runs/" + f.runID} {
		w := f.do("GET", p, "", nil)
		if w.Code != 200 {
			t.Fatalf("%s: %d", p, w.Code)
		}
		bad, text := unsafeMarkup(w.Body.String())
		if len(bad) > 0 {
			t.Errorf("%s: %v", p, bad)
		}
		if !strings.Contains(text, xss) && !strings.Contains(text, strings.ReplaceAll(xss, `"`, `'`)) {
			t.Errorf("%s: the payload is not shown as text", p)
		}
	}
}

func TestHealthPage(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		query     string
		code      int
		want, not []string
	}{
		{"/", 200, []string{"compile panic on enum E{}", "dead link in llms.txt", `class="trend"`, "<polygon", "<polyline", "3 of 3 clusters"}, nil},
		{"/?state=open", 200, []string{"compile panic", "2 of 3 clusters"}, []string{"dead link"}},
		{"/?state=resolved", 200, []string{"dead link"}, []string{"compile panic"}},
		{"/?severity=critical&surface=compiler", 200, []string{"compile panic", "1 of 3"}, []string{"dead link"}},
		{"/?surface=docs", 200, []string{"dead link"}, []string{"compile panic"}},
		{"/?state=bogus", 400, []string{"state &#34;bogus&#34;: want one of"}, nil},
		{"/?severity=dire", 400, []string{"severity &#34;dire&#34;"}, nil},
		{"/?surface=Bad%20Surface", 400, []string{"is not a surface name"}, nil},
		{"/?page=0", 400, []string{"page &#34;0&#34;"}, nil},
	}
	for _, tt := range tests {
		w := f.do("GET", tt.query, "", nil)
		if w.Code != tt.code {
			t.Errorf("%s: %d, want %d", tt.query, w.Code, tt.code)
		}
		for _, s := range tt.want {
			if !strings.Contains(w.Body.String(), s) {
				t.Errorf("%s: page lacks %q", tt.query, s)
			}
		}
		for _, s := range tt.not {
			if strings.Contains(w.Body.String(), s) {
				t.Errorf("%s: page holds %q", tt.query, s)
			}
		}
	}
}

func TestHealthWithoutReport(t *testing.T) {
	f := newFixture(t)
	os.Remove(filepath.Join(f.dir, "reports", latestJSON))
	w := f.do("GET", "/", "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "No report yet") {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	w = f.do("GET", "/api/report", "", nil)
	if w.Code != 404 || !strings.Contains(w.Body.String(), "no report yet") {
		t.Errorf("api: %d %s", w.Code, w.Body)
	}
	os.WriteFile(filepath.Join(f.dir, "reports", latestJSON), []byte(`{"schema":2}`), 0o644)
	w = f.do("GET", "/api/report", "", nil)
	if w.Code != 500 || !strings.Contains(w.Body.String(), "internal error") {
		t.Errorf("api on a bad file: %d %s", w.Code, w.Body)
	}
}

func TestClusterPage(t *testing.T) {
	f := newFixture(t)
	w := f.do("GET", "/clusters/aaaa1111", "", nil)
	body := w.Body.String()
	for _, s := range []string{"qa_compile {&#34;source&#34;:&#34;enum E{}&#34;}", `href="/runs/` + f.runID + `"`, "r-gone", "0x111111…1111", "block 10", "not found", "qa-fuzz"} {
		if !strings.Contains(body, s) {
			t.Errorf("cluster page lacks %q", s)
		}
	}
	for _, s := range []string{"introduced by <code>3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49</code>", "simplify &lt;b&gt;enum&lt;/b&gt; lowering", "bisection, entry 9"} {
		if !strings.Contains(body, s) {
			t.Errorf("cluster page lacks the cause %q", s)
		}
	}
	if strings.Contains(body, `href="/runs/r-gone"`) {
		t.Error("links a run that has no record here")
	}
	if strings.Contains(body, "Post correction") {
		t.Error("the mark form is shown without a session")
	}
	w = f.do("GET", "/clusters/cccc3333", "", nil)
	if !strings.Contains(w.Body.String(), "Entry 7 (resolution)") {
		t.Errorf("the correction is not shown:\n%s", w.Body)
	}
	w = f.do("GET", "/clusters/nope", "", nil)
	if w.Code != 404 || !strings.Contains(w.Body.String(), "no cluster &#34;nope&#34;") {
		t.Errorf("unknown cluster: %d", w.Code)
	}
	f.src.err = ErrUnavailable
	w = f.do("GET", "/clusters/aaaa1111", "", nil)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "Entries could not be read: unavailable") {
		t.Errorf("chain down: %d %s", w.Code, w.Body)
	}
}

func TestAPIReadEndpoints(t *testing.T) {
	f := newFixture(t)
	get := func(path string, want int) map[string]any {
		t.Helper()
		w := f.do("GET", path, "", nil)
		if w.Code != want {
			t.Fatalf("%s: %d, want %d: %s", path, w.Code, want, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: content type %q", path, ct)
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m
	}
	var rep fleet.Report
	json.Unmarshal(f.do("GET", "/api/report", "", nil).Body.Bytes(), &rep)
	if diff := cmp.Diff(f.report.Clusters[1].Title, rep.Clusters[1].Title); diff != "" || len(rep.Clusters) != 3 {
		t.Errorf("report: %d clusters %s", len(rep.Clusters), diff)
	}
	if m := get("/api/report?state=resolved", 200); len(m["clusters"].([]any)) != 1 {
		t.Errorf("filtered report: %v", m["clusters"])
	}
	get("/api/report?severity=dire", 400)
	if m := get("/api/report/history", 200); len(m["points"].([]any)) != 3 {
		t.Errorf("history: %v", m)
	}
	m := get("/api/clusters/aaaa1111", 200)
	if len(m["entries"].([]any)) != 2 || m["runs"].([]any)[0] != f.runID {
		t.Errorf("cluster: %v", m)
	}
	if h := m["history"].([]any); len(h) != 3 || h[2].(float64) != 3 {
		t.Errorf("cluster history %v", h)
	}
	get("/api/clusters/nope", 404)
	if m := get("/api/runs", 200); len(m["runs"].([]any)) != 1 {
		t.Errorf("runs: %v", m)
	}
	get("/api/runs?limit=x", 400)
	m = get("/api/runs/"+f.runID, 200)
	if len(m["records"].([]any)) != 4 || len(m["timeline"].([]any)) != 2 {
		t.Errorf("run: %v", m)
	}
	if e := get("/api/runs/r-unknown", 404); !strings.Contains(e["error"].(string), `no run "r-unknown"`) {
		t.Errorf("unknown run: %v", e)
	}
	if e := get("/api/runs/..%2f..%2fetc", 400); !strings.Contains(e["error"].(string), "run id") {
		t.Errorf("bad run id: %v", e)
	}
	get("/api/runs/.hidden", 400)
	m = get("/api/fleet", 200)
	if m["dial"] != "observe" || m["paused"] != false || len(m["specialists"].([]any)) != 2 {
		t.Errorf("fleet: %v", m)
	}
	if spec := m["specialists"].([]any)[0].(map[string]any); spec["last_run_id"] != f.runID || spec["last_outcome"] != "done" {
		t.Errorf("fleet: the latest run is not the fuzz specialist's: %v", spec)
	}
	get("/api/feed", 200)
	get("/api/feed?limit=0", 400)
	if e := get("/api/bogus", 404); !strings.Contains(e["error"].(string), "no endpoint /api/bogus") {
		t.Errorf("unknown endpoint: %v", e)
	}
}

func TestControlsRefusals(t *testing.T) {
	f := newFixture(t)
	cookie, csrf := f.login(t)
	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	// wrong differs from csrf in its first character ("00"+csrf[2:] was
	// the real token whenever it began with 00: one run in 256).
	wrong := "0" + csrf[1:]
	if csrf[0] == '0' {
		wrong = "1" + csrf[1:]
	}
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		code                     int
		msg                      string
	}{
		{"no token", "POST", "/api/dial", form("rung", "exercise", "reason", "x"), nil, 401, "send Authorization: Bearer"},
		{"wrong token", "POST", "/api/pause", "", map[string]string{"Authorization": "Bearer nope"}, 401, "does not match"},
		{"basic auth is no bearer", "POST", "/api/pause", "", map[string]string{"Authorization": "Basic " + testToken}, 401, "send Authorization"},
		{"GET on a control", "GET", "/api/dial", "", bearer, 405, "GET /api/dial changes state: use POST"},
		{"PUT on a control", "PUT", "/api/pause", "", bearer, 405, "use POST"},
		{"bad dial word", "POST", "/api/dial", form("rung", "yolo", "reason", "x"), bearer, 400, `dial "yolo": want observe, exercise or propose`},
		{"dial without reason", "POST", "/api/dial", form("rung", "exercise"), bearer, 400, "a reason is required"},
		{"unknown specialist", "POST", "/api/specialists/nobody/run", "", bearer, 400, `no specialist "nobody"`},
		{"busy specialist", "POST", "/api/specialists/busy/run", "", bearer, 409, "already running"},
		{"bad mark", "POST", "/api/findings/3/mark", form("what", "wontfix"), bearer, 400, `mark "wontfix": want one of`},
		{"duplicate without of", "POST", "/api/findings/3/mark", form("what", "duplicate-of"), bearer, 400, "needs of=J"},
		{"bad index", "POST", "/api/findings/x1/mark", form("what", "resolved"), bearer, 400, "not an entry index"},
		{"cookie without csrf", "POST", "/api/pause", form("reason", "x"), map[string]string{"Cookie": cookie}, 403, "CSRF"},
		{"cookie with a wrong csrf", "POST", "/api/pause", form("csrf", wrong), map[string]string{"Cookie": cookie}, 403, "CSRF"},
		{"cross-site with cookie", "POST", "/api/pause", form("csrf", csrf), map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, 403, "cross-site request refused"},
		{"foreign origin", "POST", "/api/pause", form("csrf", csrf), map[string]string{"Cookie": cookie, "Origin": "http://evil.example"}, 403, "Origin http://evil.example"},
		{"same-origin wins over a foreign Origin", "POST", "/api/findings/3/mark", form("csrf", csrf, "what", "wontfix"), map[string]string{"Cookie": cookie, "Origin": "http://evil.example", "Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site: same-site"},
		{"bad json", "POST", "/api/dial", "{nope", map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}, 400, "not a JSON object"},
		{"json array field", "POST", "/api/dial", `{"rung":["observe"]}`, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}, 400, `field "rung"`},
		{"multipart", "POST", "/api/pause", "x", map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "multipart/form-data; boundary=x"}, 400, "Content-Type"},
		{"huge body", "POST", "/api/pause", "reason=" + strings.Repeat("a", 70<<10), bearer, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(tt.method, tt.path, tt.body, tt.hdr)
			if w.Code != tt.code {
				t.Errorf("%d, want %d: %s", w.Code, tt.code, w.Body)
			}
			var m struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m.OK || !strings.Contains(m.Error, tt.msg) {
				t.Errorf("body %s, want an error with %q", w.Body, tt.msg)
			}
		})
	}
	if d, _ := f.control.Dial(); d != fleet.Observe {
		t.Errorf("a refused request moved the dial to %s", d)
	}
	if p, _ := f.control.Paused(); p {
		t.Error("a refused request paused the fleet")
	}
	if calls := f.controls.Calls(); len(calls) != 0 {
		t.Errorf("refused requests reached the controls: %v", calls)
	}
	if audit, _ := f.control.Audit(); len(audit) != 0 {
		t.Errorf("refused requests were audited: %v", audit)
	}
}

func TestControlsWithBearer(t *testing.T) {
	f := newFixture(t)
	post := func(path, body string) map[string]any {
		t.Helper()
		w := f.do("POST", path, body, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"})
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		var m map[string]any
		json.Unmarshal(w.Body.Bytes(), &m)
		return m
	}
	if m := post("/api/dial", `{"rung":"exercise","reason":"load test"}`); m["from"] != "observe" || m["to"] != "exercise" {
		t.Errorf("dial: %v", m)
	}
	b, _ := os.ReadFile(filepath.Join(f.dir, "autonomy"))
	if string(b) != "exercise\n" {
		t.Errorf("autonomy file %q", b)
	}
	post("/api/pause", `{"reason":"maintenance"}`)
	if p, _ := f.control.Paused(); !p {
		t.Error("not paused")
	}
	post("/api/resume", `{}`)
	if m := post("/api/specialists/smoke/run", ``); m["message"] != "smoke started" {
		t.Errorf("run now: %v", m)
	}
	// A run now does not queue: when it took a slot others waited for, the
	// operator is told whom it went ahead of.
	if m := post("/api/specialists/fuzz/run", ``); m["message"] != "fuzz started ahead of perf, ux, waiting for a slot (a run now does not queue; they take the next free slots)" {
		t.Errorf("run now ahead of waiting starts: %v", m)
	}
	post("/api/triage", ``)
	if m := post("/api/findings/3/mark", `{"what":"duplicate-of","of":1}`); m["correction"].(map[string]any)["index"].(float64) != 99 {
		t.Errorf("mark: %v", m)
	}
	audit, _ := f.control.Audit()
	var got []string
	for _, a := range audit {
		got = append(got, a.Action+" "+a.User+" "+a.Reason)
	}
	want := []string{
		"dial bearer token via API from 127.0.0.1 load test",
		"pause bearer token via API from 127.0.0.1 maintenance",
		"resume bearer token via API from 127.0.0.1 ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	wantCalls := []string{
		"run smoke by bearer token via API from 127.0.0.1",
		"run fuzz by bearer token via API from 127.0.0.1",
		"triage by bearer token via API from 127.0.0.1",
		"mark 3 duplicate-of=1 by bearer token via API from 127.0.0.1",
	}
	if diff := cmp.Diff(wantCalls, f.controls.Calls()); diff != "" {
		t.Errorf("controls (-want +got):\n%s", diff)
	}
	ev := f.c.hub.Recent(10, nil)
	if len(ev) < 4 || ev[len(ev)-1].Kind != KindControl || !strings.Contains(ev[len(ev)-1].Text, "dial observe -> exercise") {
		t.Errorf("control events: %+v", ev)
	}
}

func TestBrowserSessionFlow(t *testing.T) {
	f := newFixture(t)
	// A wrong token is refused and sets no cookie.
	w := f.do("POST", "/login", url.Values{"token": {"wrong"}}.Encode(), nil)
	if w.Code != 401 || len(w.Result().Cookies()) != 0 || !strings.Contains(w.Body.String(), "wrong token") {
		t.Errorf("wrong token: %d %v", w.Code, w.Result().Cookies())
	}
	if w := f.do("GET", "/login", "", nil); w.Code != 200 {
		t.Errorf("login page %d", w.Code)
	}
	if w := f.do("GET", "/logout", "", nil); w.Code != 405 {
		t.Errorf("GET /logout %d", w.Code)
	}
	w = f.do("POST", "/login", url.Values{"token": {testToken}, "name": {"alice\x1b[31m\nbob"}, "back": {"//evil.example/"}}.Encode(), nil)
	if w.Code != 303 || w.Header().Get("Location") != "/" {
		t.Fatalf("login: %d to %q (an off-site back must not be followed)", w.Code, w.Header().Get("Location"))
	}
	var sc *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie {
			sc = c
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/" || sc.Value == testToken || len(sc.Value) != 64 {
		t.Fatalf("session cookie %+v", sc)
	}
	cookie := sc.Name + "=" + sc.Value
	page := f.do("GET", "/fleet", "", map[string]string{"Cookie": cookie}).Body.String()
	for _, s := range []string{`id="dial-set"`, `id="pause"`, "logged in as alice", "Run now", `name="csrf"`} {
		if !strings.Contains(page, s) {
			t.Errorf("logged-in fleet page lacks %q", s)
		}
	}
	if strings.Contains(page, "\x1b") {
		t.Error("a control character of the login name reached the page")
	}
	_, csrf := f.login(t)
	// The first session's token is not the second's.
	i := strings.Index(page, `name="csrf" value="`)
	first := page[i+19 : i+19+64]
	if first == csrf {
		t.Error("two sessions share a CSRF token")
	}
	w = f.do("POST", "/api/dial", url.Values{"csrf": {first}, "rung": {"propose"}, "reason": {"ship it"}, "back": {"/fleet"}}.Encode(),
		map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8787"})
	if w.Code != 303 || w.Header().Get("Location") != "/fleet" {
		t.Fatalf("form dial: %d %s", w.Code, w.Body)
	}
	page = f.do("GET", "/fleet", "", map[string]string{"Cookie": cookie}).Body.String()
	if !strings.Contains(page, "dial observe -&gt; propose") || !strings.Contains(page, `id="dial">propose<`) {
		t.Errorf("flash or dial missing after the form post")
	}
	audit, _ := f.control.Audit()
	if len(audit) != 1 || audit[0].User != "alice [31m bob via console from 127.0.0.1" || audit[0].Reason != "ship it" {
		t.Errorf("audit %+v", audit)
	}
	// A refused form control comes back as a flash, not a JSON page.
	w = f.do("POST", "/api/dial", url.Values{"csrf": {first}, "rung": {"yolo"}, "reason": {"x"}, "back": {"/fleet"}}.Encode(), map[string]string{"Cookie": cookie})
	if w.Code != 303 {
		t.Fatalf("refused form: %d", w.Code)
	}
	if page := f.do("GET", "/fleet", "", map[string]string{"Cookie": cookie}).Body.String(); !strings.Contains(page, "refused: bad request: dial &#34;yolo&#34;") {
		t.Error("no flash for the refused form")
	}
	// Log out: the cookie no longer works.
	if w := f.do("POST", "/logout", url.Values{"csrf": {first}}.Encode(), map[string]string{"Cookie": cookie}); w.Code != 303 {
		t.Fatalf("logout %d", w.Code)
	}
	if w := f.do("POST", "/api/pause", url.Values{"csrf": {first}}.Encode(), map[string]string{"Cookie": cookie}); w.Code != 401 {
		t.Errorf("after logout: %d", w.Code)
	}
}

func TestReadOnlyWithoutToken(t *testing.T) {
	f := newFixture(t)
	f.c.cfg.Token = ""
	if w := f.do("GET", "/", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "read-only") {
		t.Errorf("page without a token: %d", w.Code)
	}
	w := f.do("POST", "/api/pause", "", map[string]string{"Authorization": "Bearer "})
	if w.Code != 503 || !strings.Contains(w.Body.String(), "controls are disabled") {
		t.Errorf("control without a configured token: %d %s", w.Code, w.Body)
	}
	if w := f.do("POST", "/login", "token=", nil); w.Code != 503 {
		t.Errorf("login without a configured token: %d", w.Code)
	}
}

func TestLoopbackHostCheck(t *testing.T) {
	f := newFixture(t)
	for host, want := range map[string]int{"127.0.0.1:8787": 200, "localhost:8787": 200, "[::1]:8787": 200, "app.localhost": 200,
		"evil.example": 421, "evil.example:8787": 421, "10.0.0.1": 421, "127.0.0.1.nip.io": 421} {
		r := httptest.NewRequest("GET", "/api/fleet", nil)
		r.Host = host
		w := httptest.NewRecorder()
		f.c.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: %d, want %d", host, w.Code, want)
		}
	}
	tests := map[string]bool{"127.0.0.1:8787": true, "[::1]:0": true, "localhost:1": true, ":8787": false, "0.0.0.0:8787": false, "10.1.2.3:80": false, "example.com:80": false, "nonsense": false}
	for addr, want := range tests {
		if got := LoopbackAddr(addr); got != want {
			t.Errorf("LoopbackAddr(%q) = %v", addr, got)
		}
	}
}

func TestSSE(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.c)
	defer srv.Close()
	f.c.cfg.Loopback = false
	f.c.hub.Publish(Event{Kind: KindFinding, Text: "before"})
	open := func(query string, hdr map[string]string) (*bufio.Reader, func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events"+query, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
			t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewReader(resp.Body), func() { cancel(); resp.Body.Close() }
	}
	next := func(r *bufio.Reader) Event {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var e Event
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					t.Fatal(err)
				}
				return e
			}
		}
	}
	r, stop := open("", nil)
	f.c.hub.Publish(Event{Kind: KindTurn, RunID: "r-1", Text: "turns are not on the feed"})
	f.c.hub.Publish(Event{Kind: KindFinding, Text: xss, Severity: "high"})
	if e := next(r); e.Kind != KindFinding || e.Text != xss || e.ID != 3 {
		t.Errorf("first event %+v", e)
	}
	stop()
	// Resume after id 1 with Last-Event-ID: the finding, not the turn.
	r, stop = open("", map[string]string{"Last-Event-ID": "1"})
	if e := next(r); e.ID != 3 {
		t.Errorf("resumed at %+v", e)
	}
	stop()
	// A run's stream has its turns.
	r, stop = open("?run=r-1&since=0", nil)
	if e := next(r); e.Kind != KindTurn || e.RunID != "r-1" {
		t.Errorf("run stream %+v", e)
	}
	stop()
	for _, q := range []string{"?kinds=bogus", "?run=../x", "?since=x"} {
		resp, err := http.Get(srv.URL + "/api/events" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d", q, resp.StatusCode)
		}
	}
	// A subscriber past the cap is refused; Close ends the streams. The
	// streams stopped above leave the hub when their handlers notice the
	// closed connection, which can be after stop returns: wait for that, or
	// the one subscriber the cap allows is already taken.
	fleettest.WaitFor(t, 5*time.Second, "the closed streams to leave the hub", func() bool { return f.c.hub.Subscribers() == 0 })
	f.c.cfg.MaxSubscribers = 1
	r, stop = open("", nil)
	defer stop()
	resp, _ := http.Get(srv.URL + "/api/events")
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("past the cap: %d", resp.StatusCode)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.ReadString(0)
		done <- err
	}()
	f.c.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the stream")
	}
}

func TestHubRing(t *testing.T) {
	h := NewHub(16)
	for i := range 40 {
		h.Publish(Event{Kind: KindFinding, Turn: i})
	}
	got, upto, _, lost := h.Since(nil, 10, nil)
	if !lost || len(got) != 16 || got[0].ID != 25 || upto != 40 {
		t.Errorf("after falling behind: lost %v, %d events from %d, upto %d", lost, len(got), got[0].ID, upto)
	}
	got, upto, _, lost = h.Since(nil, 38, func(e *Event) bool { return e.ID != 39 })
	if lost || len(got) != 1 || got[0].ID != 40 || upto != 40 {
		t.Errorf("filtered tail: %+v %d %v", got, upto, lost)
	}
	if r := h.Recent(3, nil); len(r) != 3 || r[0].ID != 40 {
		t.Errorf("recent %+v", r)
	}
	h.Close()
	h.Publish(Event{})
	if h.Last() != 40 {
		t.Error("published after Close")
	}
}

func TestRunsPage(t *testing.T) {
	f := newFixture(t)
	w := f.do("GET", "/runs", "", nil)
	if !strings.Contains(w.Body.String(), f.runID) || !strings.Contains(w.Body.String(), "fuzz") {
		t.Errorf("runs page: %s", w.Body)
	}
	w = f.do("GET", "/runs/"+f.runID, "", nil)
	body := w.Body.String()
	for _, s := range []string{"qa_compile", "outcome=crashed", "refused: needs dial exercise", "one crash", `class="verdict-refused"`} {
		if !strings.Contains(body, s) {
			t.Errorf("run page lacks %q", s)
		}
	}
	if w := f.do("GET", "/runs/nope", "", nil); w.Code != 404 {
		t.Errorf("unknown run page %d", w.Code)
	}
	if w := f.do("GET", "/runs?page=x", "", nil); w.Code != 400 {
		t.Errorf("bad page %d", w.Code)
	}
}

func TestSafeBack(t *testing.T) {
	for in, want := range map[string]string{
		"/fleet": "/fleet", "/?state=open": "/?state=open", "": "/", "fleet": "/", "//evil.example": "/",
		"/\t/evil.example": "/", "/\\evil.example": "/", "/\n/x": "/", "https://evil.example": "/", "/\x7f": "/",
	} {
		if got := safeBack(in); got != want {
			t.Errorf("safeBack(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRunLiveWhileInFlight(t *testing.T) {
	f := newFixture(t)
	w, err := trajectory.Create(f.dir, "r-live", trajectory.Header{RunID: "r-live", Specialist: "smoke", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(trajectory.Footer{Outcome: trajectory.OutcomeDone})
	w.WriteTurn(trajectory.Turn{Index: 0, ProposedAction: &trajectory.Action{Tool: "qa_fetch"}, Validation: trajectory.Validation{Result: "ok"}, StartedAt: time.Now()})
	live := func() (bool, string) {
		runs, _ := f.c.runs.List()
		for _, r := range runs {
			if r.RunID == "r-live" {
				d, _ := f.c.runs.Get("r-live")
				return r.Live && d.Summary.Live, r.Outcome
			}
		}
		t.Fatal("run not listed")
		return false, ""
	}
	if l, _ := live(); l {
		t.Error("live before any turn event")
	}
	f.c.Publish(Event{Kind: KindTurn, RunID: "r-live", Turn: 0})
	if l, _ := live(); !l {
		t.Error("not live after a turn event")
	}
	page := f.do("GET", "/runs/r-live", "", nil).Body.String()
	if !strings.Contains(page, `data-live="run"`) || !strings.Contains(page, `data-run="r-live"`) || !strings.Contains(page, ">running<") {
		t.Error("the run page does not ask for live updates")
	}
	f.c.Publish(Event{Kind: KindRunFinished, RunID: "r-live"})
	if l, _ := live(); l {
		t.Error("live after run_finished")
	}
}

// TestFleetTriggerStats: each specialist's row on the Fleet page shows its
// trigger counts, its last skip, and the event starts held until a run
// ended (held / retried), with the start waiting now flagged by the name and
// its reason shown; a specialist with none shows zeros and no flag. The
// daemon's own passes (triage) get the same row, without a run-now control.
// The JSON carries the same.
func TestFleetTriggerStats(t *testing.T) {
	f := newFixture(t)
	f.src.mu.Lock()
	f.src.fleet.Specialists = []Specialist{
		{Name: "tri", Trigger: "every 5m, events feedback", Running: true, Fired: 4, Started: 3, Skipped: 1, LastSkip: "paused",
			Held: 5, Retried: 2, PendingReason: "event:feedback x 7"},
		{Name: "smoke", Trigger: "every 20s", Fired: 9, Started: 9},
		{Name: "perf", Trigger: "every 40s", Fired: 4, Held: 4, PendingReason: "every", PendingSince: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC),
			LongestWaitSeconds: 21, Starved: true, StarvedReason: "no run since 11:58:00 (3 periods of 40s): its start (every) has waited since 11:58:40 for a free slot"},
	}
	f.src.fleet.Passes = []Specialist{{Name: "triage", Trigger: "every 5m0s; on feedback", Fired: 6, Started: 6, Held: 3, Retried: 1, PendingReason: "event:feedback x 2"}}
	f.src.mu.Unlock()
	cookie, _ := f.login(t)
	w := f.do("GET", "/fleet", "", map[string]string{"Cookie": cookie})
	page := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("fleet: %d\n%s", w.Code, page)
	}
	if !strings.Contains(page, "<th>held / retried</th>") {
		t.Error("fleet page lacks the held / retried column")
	}
	row := func(attr, name string) string {
		t.Helper()
		i := strings.Index(page, `<tr `+attr+`="`+name+`">`)
		if i < 0 {
			t.Fatalf("no row for %s in\n%s", name, page)
		}
		return page[i : i+strings.Index(page[i:], "</tr>")]
	}
	tri := row("data-specialist", "tri")
	for _, want := range []string{`<span class="flag running">running</span> <span class="flag pending">start waiting</span>`,
		"<td>4 / 3 / 1</td>", "<td>paused</td>",
		`<td>5 / 2<br><span class="muted small">waits for a run to end: <code class="pending-reason">event:feedback x 7</code></span></td>`} {
		if !strings.Contains(tri, want) {
			t.Errorf("tri's row lacks %q:\n%s", want, tri)
		}
	}
	smoke := row("data-specialist", "smoke")
	for _, want := range []string{"<td>9 / 9 / 0</td>", "<td>0 / 0</td>", `class="run-now"`} {
		if !strings.Contains(smoke, want) {
			t.Errorf("smoke's row lacks %q:\n%s", want, smoke)
		}
	}
	if strings.Contains(smoke, "start waiting") || strings.Contains(smoke, "waits for a run") {
		t.Errorf("smoke has no start waiting, yet its row says so:\n%s", smoke)
	}
	if strings.Contains(smoke, "starved") {
		t.Errorf("smoke is not starved, yet its row says so:\n%s", smoke)
	}
	perf := row("data-specialist", "perf")
	for _, want := range []string{`<span class="flag starved">starved</span>`,
		`<span class="small starved-reason">no run since 11:58:00 (3 periods of 40s): its start (every) has waited since 11:58:40 for a free slot</span>`,
		`waiting since <time datetime="2026-11-24T12:00:00Z">`, "longest wait 21 s"} {
		if !strings.Contains(perf, want) {
			t.Errorf("perf's row lacks %q:\n%s", want, perf)
		}
	}
	triage := row("data-pass", "triage")
	for _, want := range []string{`triage <span class="flag pending">start waiting</span>`, "<td>every 5m0s; on feedback</td>", "<td>6 / 6 / 0</td>",
		`<td>3 / 1<br><span class="muted small">waits for a run to end: <code class="pending-reason">event:feedback x 2</code></span></td>`} {
		if !strings.Contains(triage, want) {
			t.Errorf("triage's row lacks %q:\n%s", want, triage)
		}
	}
	if strings.Contains(triage, "run-now") {
		t.Errorf("triage's row has a run-now control (triage has its own):\n%s", triage)
	}

	var m struct {
		Specialists []map[string]any `json:"specialists"`
		Passes      []map[string]any `json:"passes"`
	}
	if err := json.Unmarshal(f.do("GET", "/api/fleet", "", nil).Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"name": "tri", "held": 5.0, "retried": 2.0, "pending_reason": "event:feedback x 7", "skipped": 1.0, "last_skip": "paused", "starved": false, "starved_reason": nil},
		{"name": "smoke", "held": 0.0, "retried": 0.0, "pending_reason": nil, "skipped": 0.0, "last_skip": nil, "starved": false, "starved_reason": nil},
		{"name": "perf", "held": 4.0, "retried": 0.0, "pending_reason": "every", "skipped": 0.0, "last_skip": nil, "starved": true,
			"starved_reason": "no run since 11:58:00 (3 periods of 40s): its start (every) has waited since 11:58:40 for a free slot"},
		{"name": "triage", "held": 3.0, "retried": 1.0, "pending_reason": "event:feedback x 2", "skipped": 0.0, "last_skip": nil, "starved": false, "starved_reason": nil},
	}
	var got []map[string]any
	for _, sp := range append(m.Specialists, m.Passes...) {
		g := map[string]any{}
		for k := range want[0] {
			g[k] = sp[k]
		}
		got = append(got, g)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/api/fleet specialists (-want +got):\n%s", diff)
	}
}

// TestFleetFuzzStats: the Fleet page shows each target's engines with their
// figures and a coverage plot, crash states escaped, without script; the
// JSON carries the same.
func TestFleetFuzzStats(t *testing.T) {
	f := newFixture(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // the fixture's; its pages' now is 2 minutes on
	f.src.mu.Lock()
	f.src.fleet.Fuzz = []FuzzStats{
		{Key: "go-0123456789abcdef", Engine: "libfuzzer", Target: "FuzzParse", Sessions: 3, ExecsPerSec: 3200, ExecsPerCPUSec: 3410, Coverage: 812, Features: 2400, CorpusSize: 57,
			Last: now, NewCoverage: now.Add(-90 * time.Minute),
			Crashes: []FuzzCrash{{State: "panic: <script>alert(1)</script>", Sessions: 2}, {State: "b", Sessions: 1}, {State: "c", Sessions: 1}, {State: "d", Sessions: 1}},
			Points:  []FuzzPoint{{now.Add(-2 * time.Hour), 100}, {now.Add(-90 * time.Minute), 812}, {now, 812}}},
		{Key: "compiler-fedcba9876543210", Engine: "builtin", Target: "compiler", Sessions: 1, ExecsPerSec: 150, CorpusSize: 9, Last: now},
	}
	f.src.fleet.Published = &PublishedSet{Set: "0123456789abcdef", Matches: true, Entry: 42, Time: now, Checked: now, Name: "grove-fleet", NameError: "not written: the dial is observe"}
	f.src.mu.Unlock()
	w := f.do("GET", "/fleet", "", nil)
	page := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("fleet: %d\n%s", w.Code, page)
	}
	for _, want := range []string{`data-fuzz="go-0123456789abcdef/libfuzzer"`, "FuzzParse", "3200", "3410/CPU-s", "812 edges, 2400 features", "1h ago",
		"panic: &lt;script&gt;alert(1)&lt;/script&gt;</code> ×2", "and 1 more", `<svg class="spark"`, "edges 100 → 812 over 3 sessions",
		`data-fuzz="compiler-fedcba9876543210/builtin"`, "never",
		"Published on the log as set <code>0123456789abcdef</code> (entry 42,", "matches what runs.",
		"The fleet's name <code>grove-fleet</code> on the registry: <strong>does not hold it</strong> (not written: the dial is observe)."} {
		if !strings.Contains(page, want) {
			t.Errorf("fleet page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("a crash state reached the page unescaped")
	}
	var m map[string]any
	if err := json.Unmarshal(f.do("GET", "/api/fleet", "", nil).Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if fz, _ := m["fuzz"].([]any); len(fz) != 2 || fz[0].(map[string]any)["execs_per_sec"] != 3200.0 {
		t.Errorf("/api/fleet fuzz: %v", m["fuzz"])
	}
}

// TestAPIReportSARIF: /api/report.sarif is the latest report as SARIF,
// one result per cluster carrying its id, filtered like /api/report.
func TestAPIReportSARIF(t *testing.T) {
	f := newFixture(t)
	get := func(path string, want int) []any {
		t.Helper()
		w := f.do("GET", path, "", nil)
		if w.Code != want {
			t.Fatalf("%s: %d, want %d: %s", path, w.Code, want, w.Body)
		}
		if want != 200 {
			return nil
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/sarif+json" {
			t.Fatalf("%s: content type %q", path, ct)
		}
		var log struct {
			Version string `json:"version"`
			Runs    []struct {
				Results []any `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 {
			t.Fatalf("%s: %v %s", path, err, w.Body)
		}
		return log.Runs[0].Results
	}
	res := get("/api/report.sarif", 200)
	if len(res) != len(f.report.Clusters) {
		t.Fatalf("%d results for %d clusters", len(res), len(f.report.Clusters))
	}
	for i, r := range res {
		fp := r.(map[string]any)["partialFingerprints"].(map[string]any)["fleetdCluster/v1"]
		if fp != f.report.Clusters[i].ID {
			t.Errorf("result %d fingerprint %v, want %s", i, fp, f.report.Clusters[i].ID)
		}
	}
	if res := get("/api/report.sarif?state=resolved", 200); len(res) != 1 {
		t.Errorf("filtered: %d results", len(res))
	}
	get("/api/report.sarif?severity=dire", 400)
	os.Remove(filepath.Join(f.dir, "reports", latestJSON))
	get("/api/report.sarif", 404)
}
