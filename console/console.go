package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a Console.
type Config struct {
	// ReportsDir and RunsDir are <data_dir>/reports and <data_dir>/runs.
	ReportsDir string
	RunsDir    string
	// Control is the dial and kill switch of the data dir.
	Control *fleet.Control
	Source  Source
	// Controls may be nil: then every control answers 503.
	Controls Controls
	// Token is the bearer token; empty disables every control (read-only).
	Token string
	// Loopback says the server listens on loopback only: requests naming
	// another host are refused (DNS rebinding).
	Loopback bool
	// MaxSubscribers caps concurrent SSE clients (default 256).
	MaxSubscribers int
	// Heartbeat is how often an idle SSE stream gets a comment line, so dead
	// clients are noticed (default 25s).
	Heartbeat time.Duration
	Logger    *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Version is fleetd's version, named in /api/report.sarif ("" omits it).
	Version string
}

// Console serves the pages, the JSON API, the SSE stream and the controls.
// It is an http.Handler; Close ends every SSE stream (call it before the
// server's Shutdown, which waits for handlers).
type Console struct {
	cfg      Config
	log      *slog.Logger
	hub      *Hub
	reports  *Reports
	runs     *Runs
	sessions *sessions
	guesses  *guesses // wrong tokens per client address (guesses.go)
	pages    map[string]*template.Template
	mux      *http.ServeMux
}

// New returns a Console; it starts no goroutine.
func New(cfg Config) (*Console, error) {
	if cfg.Control == nil || cfg.Source == nil {
		return nil, errors.New("console: Config needs Control and Source")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxSubscribers <= 0 {
		cfg.MaxSubscribers = 256
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 25 * time.Second
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{
		cfg: cfg, log: cfg.Logger.With("component", "console"), hub: NewHub(1024),
		reports: NewReports(cfg.ReportsDir), runs: NewRuns(cfg.RunsDir),
		sessions: newSessions(cfg.Now), pages: pages, mux: http.NewServeMux(),
	}
	c.hub.now = cfg.Now
	c.guesses = newGuesses(cfg.Now, c.log)
	c.routes()
	return c, nil
}

// Hub is where the daemon publishes events.
func (c *Console) Hub() *Hub { return c.hub }

// Publish puts an event on the live feed and keeps track of runs in
// flight: a turn marks its run live, its run_finished event ends that.
func (c *Console) Publish(e Event) {
	switch e.Kind {
	case KindTurn:
		if e.RunID != "" {
			c.runs.setLive(e.RunID, true, c.cfg.Now())
		}
	case KindRunFinished:
		if e.RunID != "" {
			c.runs.setLive(e.RunID, false, c.cfg.Now())
		}
	}
	c.hub.Publish(e)
}

// Close ends every SSE stream; pages keep working.
func (c *Console) Close() { c.hub.Close() }

func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET /{$}", c.healthPage)
	m.HandleFunc("GET /clusters/{id}", c.clusterPage)
	m.HandleFunc("GET /runs", c.runsPage)
	m.HandleFunc("GET /runs/{id}", c.runPage)
	m.HandleFunc("GET /fleet", c.fleetPage)
	m.HandleFunc("GET /feed", c.feedPage)
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("/login", c.post(c.login))
	m.HandleFunc("/logout", c.post(c.logout))
	m.Handle("GET /static/", c.static())
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	m.HandleFunc("GET /api/report", c.apiReport)
	m.HandleFunc("GET /api/report/history", c.apiHistory)
	m.HandleFunc("GET /api/report.sarif", c.apiReportSARIF)
	m.HandleFunc("GET /api/clusters/{id}", c.apiCluster)
	m.HandleFunc("GET /api/runs", c.apiRuns)
	m.HandleFunc("GET /api/runs/{id}", c.apiRun)
	m.HandleFunc("GET /api/fleet", c.apiFleet)
	m.HandleFunc("GET /api/feed", c.apiFeed)
	m.HandleFunc("GET /api/events", c.apiEvents)

	m.HandleFunc("/api/dial", c.post(c.control(c.setDial)))
	m.HandleFunc("/api/pause", c.post(c.control(c.pause)))
	m.HandleFunc("/api/resume", c.post(c.control(c.resume)))
	m.HandleFunc("/api/specialists/{name}/run", c.post(c.control(c.runNow)))
	m.HandleFunc("/api/triage", c.post(c.control(c.triageNow)))
	m.HandleFunc("/api/findings/{index}/mark", c.post(c.control(c.mark)))
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		c.apiError(w, r, fmt.Errorf("%w: no endpoint %s (see docs/architecture.md, \"The console\")", ErrNotFound, clip.Text(r.URL.Path, 80)))
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.pageError(w, r, fmt.Errorf("%w: no page %s", ErrNotFound, clip.Text(r.URL.Path, 80)))
	})
}

// contentSecurityPolicy allows scripts, styles, images and connections from
// the console itself only, no inline script or style, no plugins, no
// framing, forms posting only to the console.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP sets the security headers, refuses foreign Host names on a
// loopback listener, and routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if c.cfg.Loopback && !loopbackHost(r.Host) {
		http.Error(w, "fleetd console: this server answers only to a loopback host name (localhost, 127.0.0.1, [::1]); got Host "+clip.Text(r.Host, 80), http.StatusMisdirectedRequest)
		return
	}
	c.mux.ServeHTTP(w, r)
}

func (c *Console) static() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	fsrv := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// post wraps a state-changing handler: POST only (405 naming the method
// otherwise), body at most 64 KiB.
func (c *Console) post(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			c.apiError(w, r, fmt.Errorf("%w: %s %s changes state: use POST", errMethod, r.Method, r.URL.Path))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		h(w, r)
	}
}

// caller is who made a control request.
type caller struct {
	user    string   // for the audit log
	session *session // nil for bearer requests
}

// controlFunc does one control and returns the message to show.
type controlFunc func(ctx context.Context, r *http.Request, p params, who caller) (string, any, error)

// control authenticates a control request (bearer token, or a session
// cookie plus its CSRF token, never cross-site), runs f and answers: a
// browser form is redirected back with the message, anything else gets
// JSON.
func (c *Console) control(f controlFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.cfg.Token == "" {
			c.apiError(w, r, fmt.Errorf("%w: controls are disabled: the daemon has no HTTP token (fleetd http-token makes one; restart the daemon)", ErrUnavailable))
			return
		}
		p, err := readParams(r)
		if err != nil {
			c.apiError(w, r, err)
			return
		}
		who, err := c.authenticate(r, p)
		if err != nil {
			c.apiError(w, r, err)
			return
		}
		msg, body, err := f(r.Context(), r, p, who)
		form := who.session != nil && !isJSON(r)
		if form {
			if err != nil {
				msg = "refused: " + publicError(err)
				c.logControlError(r, err)
			}
			c.sessions.setFlash(who.session.id, msg)
			http.Redirect(w, r, safeBack(p.get("back")), http.StatusSeeOther)
			return
		}
		if err != nil {
			c.apiError(w, r, err)
			return
		}
		if body == nil {
			body = map[string]any{"ok": true, "message": msg}
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// authenticate checks a control request's credentials.
func (c *Console) authenticate(r *http.Request, p params) (caller, error) {
	ip := remoteIP(r)
	if tok, ok := bearer(r); ok {
		if ok, wait := c.guesses.allow(ip); !ok {
			return caller{}, fmt.Errorf("%w: retry in %s", errTooMany, wait.Round(time.Second))
		}
		if !tokenEqual(tok, c.cfg.Token) {
			c.guesses.failed(ip)
			c.log.Warn("console control refused: wrong bearer token", "remote", ip, "path", r.URL.Path)
			return caller{}, fmt.Errorf("%w: the bearer token does not match <data_dir>/keys/http.token", errUnauth)
		}
		return caller{user: "bearer token via API from " + ip}, nil
	}
	if why := crossSite(r); why != "" {
		return caller{}, fmt.Errorf("%w: %s", errForbidden, why)
	}
	se := c.sessions.get(r)
	if se == nil {
		return caller{}, fmt.Errorf("%w: send Authorization: Bearer <token> (fleetd http-token prints it), or log in at /login", errUnauth)
	}
	if !tokenEqual(p.get("csrf"), se.csrf) {
		return caller{}, fmt.Errorf("%w: missing or wrong CSRF token: reload the page and try again", errForbidden)
	}
	return caller{user: se.name + " via console from " + ip, session: se}, nil
}

func remoteIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// safeBack returns a local path to redirect to: back if it is one, else "/".
// Browsers drop tabs and newlines from URLs and read a backslash as a
// slash, so "/\t/evil" and "/\\evil" would leave the site: any control byte
// or backslash sends the user home instead.
func safeBack(back string) string {
	if back == "" || back[0] != '/' || strings.HasPrefix(back, "//") || strings.ContainsRune(back, '\\') {
		return "/"
	}
	for i := 0; i < len(back); i++ {
		if back[i] < 0x20 || back[i] == 0x7f {
			return "/"
		}
	}
	return back
}

// params are a request's form or JSON body fields.
type params map[string]string

func (p params) get(k string) string { return p[k] }

func isJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json"
}

// readParams reads a form (urlencoded or multipart is not accepted) or a
// JSON object of strings, numbers and booleans. Errors wrap ErrBadRequest
// and say what was wrong.
func readParams(r *http.Request) (params, error) {
	p := params{}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/json":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: read body: %w", ErrBadRequest, err)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			return p, nil
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%w: body is not a JSON object: %v", ErrBadRequest, err)
		}
		for k, v := range m {
			switch v := v.(type) {
			case string:
				p[k] = v
			case float64:
				p[k] = fmt.Sprint(v)
			case json.Number:
				p[k] = v.String()
			case bool:
				p[k] = fmt.Sprint(v)
			case nil:
			default:
				return nil, fmt.Errorf("%w: field %q: want a string or a number", ErrBadRequest, clip.Text(k, 40))
			}
		}
	case "application/x-www-form-urlencoded", "":
		if err := r.ParseForm(); err != nil {
			return nil, fmt.Errorf("%w: form: %w", ErrBadRequest, err)
		}
		for k, vs := range r.PostForm {
			if len(vs) > 0 {
				p[k] = vs[0]
			}
		}
	default:
		return nil, fmt.Errorf("%w: Content-Type %q: send application/json or a form (application/x-www-form-urlencoded)", ErrBadRequest, clip.Text(ct, 60))
	}
	return p, nil
}

// statusOf maps an error to an HTTP status.
func statusOf(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, errUnauth):
		return http.StatusUnauthorized
	case errors.Is(err, errTooMany):
		return http.StatusTooManyRequests
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoReport):
		return http.StatusNotFound
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed
	case errors.Is(err, ErrNotStarted):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// publicError is what a client may see of err: its message for the errors
// the console and its sources classify, "internal error" otherwise (the
// details go to the log).
func publicError(err error) string {
	if statusOf(err) == http.StatusInternalServerError {
		return "internal error (see the daemon's log)"
	}
	return err.Error()
}

func (c *Console) logControlError(r *http.Request, err error) {
	if statusOf(err) == http.StatusInternalServerError {
		c.log.Error("console request", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}

// apiError answers with {"ok":false,"error":...} and the error's status.
func (c *Console) apiError(w http.ResponseWriter, r *http.Request, err error) {
	c.logControlError(r, err)
	switch statusOf(err) {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="fleetd"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", fmt.Sprint(int(guessRefill.Seconds())))
	}
	writeJSON(w, statusOf(err), map[string]any{"ok": false, "error": publicError(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
