package browser

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/crawl"
)

// ErrNoBrowser is returned by Find when no Chromium is installed.
var ErrNoBrowser = errors.New("no Chromium found (set FLEETD_CHROMIUM or install the chromium package)")

// ErrClosed is returned by Render after Close.
var ErrClosed = errors.New("browser closed")

// Defaults of Config.
const (
	DefaultPageTimeout = 15 * time.Second
	DefaultQuiet       = 500 * time.Millisecond
	DefaultMaxHTML     = 512 << 10
)

// Limits of what one render keeps.
const (
	maxRequests = 400
	maxMessages = 40 // exceptions, console errors, CSP, mixed content, dialogs: each
	domReserve  = 2 * time.Second
	// tabBudget bounds opening a tab and setting it up (the Fetch,
	// Network, Page and Runtime domains, the observer): machine time,
	// apart from the page's budget.
	tabBudget = 15 * time.Second
)

// Find returns the path of a Chromium binary: $FLEETD_CHROMIUM when set,
// else the first of chromium, chromium-browser, google-chrome,
// google-chrome-stable and headless-shell on PATH. It returns ErrNoBrowser
// when there is none, or an error naming a FLEETD_CHROMIUM that is not an
// executable file.
func Find() (string, error) {
	if p := os.Getenv("FLEETD_CHROMIUM"); p != "" {
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("FLEETD_CHROMIUM=%s: not an executable file", p)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Config configures a Browser.
type Config struct {
	// Exec is the Chromium binary; "" means Find's.
	Exec string
	// Allow decides whether the browser may send a request to rawURL (the
	// tools' fetch allowlist); nil refuses everything.
	Allow func(rawURL string) error
	// Pace waits for the request's slot (the tools' per-host pacing) before
	// a request the allowlist took is sent; an error fails the request. nil:
	// no pacing.
	Pace func(ctx context.Context, rawURL string) error
	// Dial connects the browser's proxy to a host:port the allowlist took
	// (the tools' connect-time checks: a name resolving to a loopback,
	// private or metadata address is refused unless listed exactly). nil: a
	// plain dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// PageTimeout bounds one page, from the navigation to reading the DOM
	// (DefaultPageTimeout). Starting the browser and opening and setting
	// up the tab (tabBudget) are machine time, bounded apart: a slow
	// (jailed, loaded) start takes nothing from a page.
	PageTimeout time.Duration
	// Quiet is how long a page must stay without requests in flight and
	// without DOM changes to count as settled (DefaultQuiet).
	Quiet time.Duration
	// MaxHTML caps the serialized DOM kept (DefaultMaxHTML bytes).
	MaxHTML int
	// Write decides every write a page tries (type Write), asked before
	// anything is sent by the fence that caught it, each time (the dial can
	// move mid-run): nil sends the write, which the caller has counted
	// against the run's budget; an error holds it, answered inside the
	// browser (or refused by the proxy) and never sent. nil: every write is
	// held (the dial at observe).
	Write func(w Write) error
	// Created, when set, hears what the platform's answer to a write the
	// page sent (one Write let through) names as created: its Location
	// header, read by crawl.CreatedURL. The run's gate records it so the
	// run may delete it again; Rendered.Created lists it too.
	Created func(w Write, created string)
	// RootCAs are trusted for the sites' TLS certificates, which the proxy
	// verifies (it ends the browser's TLS: tunnel.go); nil: the system's.
	RootCAs *x509.CertPool
	// Session, when set, gives RenderAs the credentials of a signed-in
	// identity (session.go); it decides at each call (the dial: below
	// exercise it refuses). nil: RenderAs refuses every identity.
	Session func(ctx context.Context, identity string) (Session, error)
	// Jail is the OS jail Chromium runs in (jail.go); the zero value
	// jails it in a temporary directory, and Render fails when the jail
	// cannot be built.
	Jail Jail
}

// Browser is one headless Chromium, started on the first Render and
// stopped by Close. Renders are serialized: one tab at a time.
type Browser struct {
	cfg Config

	mu       sync.Mutex // serializes Render and guards the fields below
	closed   bool
	started  bool
	proxy    *proxy
	actx     context.Context // the allocator's
	acancel  context.CancelFunc
	bctx     context.Context // the browser's (its first tab)
	bcancel  context.CancelFunc
	profile  string // --user-data-dir of this browser's processes
	pid      int
	closing  sync.WaitGroup // tabs being closed
	startErr error          // why Chromium would not start, kept
	grants   grants         // writes the tabs let through, for the proxy
	jail     *jailed        // set by launch (jail.go)
	tainted  error          // why a signed-in render's cookies stay: nothing renders after it
}

// New returns a Browser; Chromium starts on the first Render. It fails when
// Config.Exec is empty and Find finds no browser.
func New(cfg Config) (*Browser, error) {
	if cfg.Exec == "" {
		p, err := Find()
		if err != nil {
			return nil, err
		}
		cfg.Exec = p
	}
	if cfg.Allow == nil {
		cfg.Allow = func(string) error { return errors.New("no allowlist configured") }
	}
	if cfg.PageTimeout <= 0 {
		cfg.PageTimeout = DefaultPageTimeout
	}
	if cfg.Quiet <= 0 {
		cfg.Quiet = DefaultQuiet
	}
	if cfg.MaxHTML <= 0 {
		cfg.MaxHTML = DefaultMaxHTML
	}
	return &Browser{cfg: cfg}, nil
}

// start launches Chromium behind the proxy (b.mu held).
func (b *Browser) start() error {
	if b.started {
		return nil
	}
	if b.startErr != nil {
		return b.startErr // a browser that would not start is not retried on every page
	}
	b.startErr = b.launch()
	return b.startErr
}

func (b *Browser) launch() error {
	px, err := startProxy(b.cfg.Allow, b.cfg.Dial, b.cfg.PageTimeout, b.cfg.RootCAs)
	if err != nil {
		return fmt.Errorf("start browser proxy: %w", err)
	}
	px.setWrites(b.write, &b.grants)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(b.cfg.Exec), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("proxy-server", "http://"+px.addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"), // loopback through the proxy too
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true), chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-popup-blocking", false), chromedp.Flag("block-new-web-contents", true),
		chromedp.Flag("dns-prefetch-disable", true),
		// One route out (docs/architecture.md, the never-list): WebRTC may
		// use no UDP that does not go through the proxy, which has none.
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		// The proxy reads inside TLS tunnels (tunnel.go): its key, and only
		// its key, is trusted for them.
		chromedp.Flag("ignore-certificate-errors-spki-list", px.mitm.spki),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,PreloadMediaEngagementData,MediaRouter,OptimizationHints,WebRtcHideLocalIpsWithMdns,NetworkTimeServiceQuerying"),
		chromedp.WindowSize(1280, 900),
	)
	jopts, err := b.jailOptions()
	if err != nil {
		px.close()
		return fmt.Errorf("start chromium %s: %w", b.cfg.Exec, err)
	}
	opts = append(opts, jopts...)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		bcancel()
		acancel()
		px.close()
		b.dropJail()
		return fmt.Errorf("start chromium %s: %w", b.cfg.Exec, err)
	}
	b.proxy, b.actx, b.acancel, b.bctx, b.bcancel = px, actx, acancel, bctx, bcancel
	if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
		b.profile = profileOf(b.pid)
	}
	b.started = true
	return nil
}

// profileOf reads the --user-data-dir argument of process pid.
func profileOf(pid int) string {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		if d, ok := bytes.CutPrefix(arg, []byte("--user-data-dir=")); ok {
			return string(d)
		}
	}
	return ""
}

// processes returns the pids of this browser's live processes: the
// descendants of the process chromedp started (Debian's chromium is a
// shell script that execs the binary, whose children do not all carry the
// profile flag) and any process started with the browser's profile
// directory (children orphaned by a dead parent keep that).
func (b *Browser) processes() []int {
	if b.pid == 0 {
		return nil
	}
	want := []byte("--user-data-dir=" + b.profile)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	var marked []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || zombie(st) {
			continue
		}
		parent[pid] = ppidOf(st)
		if b.profile == "" {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				marked = append(marked, pid)
				break
			}
		}
	}
	in := map[int]bool{}
	var mine func(pid int, depth int) bool
	mine = func(pid, depth int) bool {
		switch {
		case pid == b.pid:
			return true
		case pid <= 1 || depth > 32:
			return false
		}
		return mine(parent[pid], depth+1)
	}
	var out []int
	for pid := range parent {
		if mine(pid, 0) || slices.Contains(marked, pid) {
			if !in[pid] {
				in[pid] = true
				out = append(out, pid)
			}
		}
	}
	slices.Sort(out)
	return out
}

// statFields are a /proc/<pid>/stat line's fields after the command name,
// field 3 (the state) first. The name is in parentheses and may hold
// anything: the fields start after the last ')'.
func statFields(stat []byte) [][]byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return bytes.Fields(stat[i+1:])
}

// ppidOf reads the parent pid (field 4) from a /proc/<pid>/stat line.
func ppidOf(stat []byte) int {
	f := statFields(stat)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(string(f[1]))
	return n
}

// zombie reports whether a /proc/<pid>/stat line is a zombie's (state Z).
func zombie(stat []byte) bool {
	f := statFields(stat)
	return len(f) > 0 && f[0][0] == 'Z'
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !zombie(st)
}

// Close stops Chromium and the proxy and kills any process left with the
// browser's profile. It is safe to call more than once; Render fails after
// it.
func (b *Browser) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.started {
		return nil
	}
	defer b.dropJail() // once no process is left to write in it
	b.closing.Wait()
	// The tree first: once the browser is gone its children are orphans,
	// no longer found as its descendants.
	tree := b.processes()
	b.bcancel()
	b.acancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []int
		for _, pid := range append(tree, b.processes()...) {
			if alive(pid) && !slices.Contains(left, pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			b.proxy.close()
			return fmt.Errorf("close browser: %d chromium processes still alive", len(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b.proxy.close()
}

// Refused returns the connections the allowlist proxy refused so far
// (host:port or URL): what the Fetch domain did not see, Chromium's own
// background traffic included.
func (b *Browser) Refused() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proxy == nil {
		return nil
	}
	return b.proxy.refusals()
}

// PID returns the browser process's id, 0 before the first Render.
func (b *Browser) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pid
}

// observer runs in an isolated world of every document: it reports DOM
// changes (at most every 100 ms) and Content-Security-Policy violations
// through the binding, out of the page's reach.
const (
	world   = "fleetd"
	binding = "__fleetdReport"
)

const observer = `(() => {
  const report = globalThis.` + binding + `;
  if (!report) return;
  let last = 0, pending = false;
  const changed = () => {
    const now = Date.now();
    if (now - last >= 100) { last = now; report('{"kind":"dom"}'); return; }
    if (!pending) { pending = true; setTimeout(() => { pending = false; last = Date.now(); report('{"kind":"dom"}'); }, 100); }
  };
  const start = () => new MutationObserver(changed).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  if (document.documentElement) start(); else document.addEventListener('DOMContentLoaded', start);
  document.addEventListener('securitypolicyviolation', e => report(JSON.stringify({kind: 'csp', directive: e.violatedDirective || e.effectiveDirective || '', blocked: e.blockedURI || '', source: e.sourceFile || ''})), true);
})()`

// recorder collects one tab's events (chromedp.Listen calls on with the
// tab's reader goroutine: it only records, under the lock).
type recorder struct {
	mu        sync.Mutex
	out       *crawl.Rendered
	allow     func(string) error
	byID      map[network.RequestID]int
	inflight  map[network.RequestID]flight
	last      time.Time // the last network or DOM activity
	loaded    bool
	docSeen   bool
	consoles  map[string]bool
	blocked   int
	held      int      // writes held by Config.Write
	cspLog    []string // CSP violations as console text, when the binding saw none
	own       map[network.RequestID]bool
	submitted bool // a form was submitted: the next document is the result
	// submittedAt is when; submitDoc the document request it led to,
	// once seen: until then (or submitGrace) the page is not settled,
	// however quiet the page before it is.
	submittedAt time.Time
	submitDoc   network.RequestID
	// unanswered: the page's main thread did not answer the last
	// confirmation of its quiet (stillQuiet).
	unanswered bool
	// ownWorld is the unique id of fleetd's isolated world in the tab's
	// current document (the observer's), "" until Chromium reports it:
	// our own evaluations run there, out of reach of a page that
	// replaces setTimeout or JSON.stringify (evalParams).
	ownWorld string
	created  func(Write, string)
	// workers are the page's dedicated workers' target ids, the ids of
	// their script requests; apart, shared and service workers' (not the
	// page's requests). workers.go.
	workers map[network.RequestID]bool
	apart   map[network.RequestID]bool
	tab     target.ID // the tab's target id: the parent of its workers
	// session is a signed-in render's (RenderAs), nil otherwise;
	// signOuts counts the sign-out requests it failed.
	session  *Session
	signOuts int
}

// noteCreated keeps what the answer to a write the page sent names as
// created (its Location, as crawl.CreatedURL reads it): a write that got an
// answer was let through by Config.Write.
func (r *recorder) noteCreated(rq crawl.Request, resp *network.Response) {
	if !isWrite(rq.Method) || strings.EqualFold(rq.Type, "websocket") {
		return
	}
	var loc string
	for k, v := range resp.Headers {
		if s, ok := v.(string); ok && strings.EqualFold(k, "location") {
			loc = s
		}
	}
	u := crawl.CreatedURL(rq.URL, "", int(resp.Status), loc, "")
	if u == "" || contains(r.out.Created, u) || len(r.out.Created) >= maxMessages {
		return
	}
	r.out.Created = append(r.out.Created, u)
	if r.created != nil {
		r.created(Write{Method: rq.Method, URL: rq.URL, Via: "page"}, u)
	}
}

// submitGrace is how long a submitted form may take to start a navigation
// before the page it was on counts as its result (a script's form that
// does not navigate).
const submitGrace = 2 * time.Second

// flight is a request in flight: the frame and document (loader) it was
// sent from, which end it when the frame goes (detached) or loads another
// document (navigated): Chromium then cancels it without a loadingFailed,
// and the page would not settle until its page budget. A WebSocket has
// neither (webSocketCreated names no frame): a top navigation ends it.
type flight struct {
	frame  cdp.FrameID
	loader cdp.LoaderID
	// fetch: followed by the Fetch domain, not the tab's Network domain
	// (a dedicated worker's request or script: workers.go).
	fetch bool
}

// endFlights ends the requests in flight from frame (any frame when frame
// is "", a top navigation) that are not from its document loader.
func (r *recorder) endFlights(frame cdp.FrameID, loader cdp.LoaderID) {
	for id, f := range r.inflight {
		if (frame == "" || f.frame == frame) && (loader == "" || f.loader != loader) {
			delete(r.inflight, id)
		}
	}
}

// end ends request id's flight, an activity.
func (r *recorder) end(id network.RequestID) {
	r.active()
	delete(r.inflight, id)
}

func (r *recorder) active() {
	r.last = time.Now()
}

func add(list *[]string, s string) {
	if len(*list) < maxMessages && !contains(*list, s) {
		*list = append(*list, s)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *recorder) on(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		r.active()
		if !r.apart[e.RequestID] {
			r.inflight[e.RequestID] = flight{frame: e.FrameID, loader: e.LoaderID, fetch: r.workers[e.RequestID]}
		}
		if r.submitted && r.submitDoc == "" && e.Type == network.ResourceTypeDocument {
			r.submitDoc = e.RequestID
			r.loaded = false // the old page's load is not the result's
		}
		if e.RedirectResponse != nil {
			if i, ok := r.byID[e.RequestID]; ok {
				r.out.Requests[i].Status = int(e.RedirectResponse.Status)
			}
		}
		if e.Request != nil && (r.own[e.RequestID] || e.Type == network.ResourceTypeOther && browserOwn(e.Request.URL)) {
			r.own[e.RequestID] = true // the browser's own request (the favicon, and where it redirects), not the page's
			break
		}
		if len(r.out.Requests) < maxRequests && e.Request != nil {
			r.byID[e.RequestID] = len(r.out.Requests)
			r.out.Requests = append(r.out.Requests, crawl.Request{URL: e.Request.URL, Method: e.Request.Method, Type: strings.ToLower(string(e.Type))})
		}
	case *network.EventResponseReceived:
		r.active()
		if i, ok := r.byID[e.RequestID]; ok && e.Response != nil {
			r.out.Requests[i].Status = int(e.Response.Status)
			r.noteCreated(r.out.Requests[i], e.Response)
			if e.Type == network.ResourceTypeDocument && (!r.docSeen || r.submitted) {
				r.docSeen = true
				r.out.Status = int(e.Response.Status)
			}
		}
	case *network.EventLoadingFinished:
		r.end(e.RequestID)
	case *network.EventLoadingFailed:
		r.end(e.RequestID)
		if e.RequestID == r.submitDoc {
			r.loaded = true // the submission went nowhere: nothing more will load
		}
		if i, ok := r.byID[e.RequestID]; ok {
			rq := &r.out.Requests[i]
			switch {
			case e.BlockedReason != "":
				rq.Failed = "blocked: " + string(e.BlockedReason)
				if e.BlockedReason == network.BlockedReasonMixedContent {
					add(&r.out.MixedContent, rq.URL)
				}
			case e.Canceled:
				rq.Failed = "canceled"
			default:
				rq.Failed = e.ErrorText
			}
			if strings.Contains(e.ErrorText, "ERR_BLOCKED_BY_CLIENT") || r.allow(rq.URL) != nil {
				rq.Blocked = true
			}
		}
	case *network.EventWebSocketCreated:
		// In flight until its handshake is answered or fails: a render
		// that ended before would close the tab on a socket the site has
		// not yet seen.
		r.active()
		r.inflight[e.RequestID] = flight{}
		if len(r.out.Requests) < maxRequests {
			rq := crawl.Request{URL: e.URL, Method: "GET", Type: "websocket"}
			if r.allow(wsAsHTTP(e.URL)) != nil {
				rq.Blocked, rq.Failed = true, "blocked: off the allowlist"
			}
			r.byID[e.RequestID] = len(r.out.Requests)
			r.out.Requests = append(r.out.Requests, rq)
		}
	case *network.EventWebSocketHandshakeResponseReceived:
		r.end(e.RequestID)
		if i, ok := r.byID[e.RequestID]; ok && e.Response != nil {
			r.out.Requests[i].Status = int(e.Response.Status)
		}
	case *network.EventWebSocketClosed:
		r.end(e.RequestID)
	case *network.EventWebSocketFrameError:
		r.end(e.RequestID)
	case *target.EventTargetCreated, *target.EventTargetInfoChanged, *target.EventAttachedToTarget, *target.EventTargetDestroyed:
		r.onTarget(e) // a page's workers (workers.go)
	case *page.EventFrameDetached:
		r.active()
		r.endFlights(e.FrameID, "")
	case *page.EventLoadEventFired:
		r.active()
		r.loaded = true
	case *page.EventFrameNavigated:
		if e.Frame == nil {
			break
		}
		if e.Frame.ParentID == "" {
			r.endFlights("", e.Frame.LoaderID) // the old document's, in any frame
		} else {
			r.endFlights(e.Frame.ID, e.Frame.LoaderID)
		}
		if e.Frame.ParentID == "" && r.submitted {
			r.active()
			r.loaded = false // a new document: settled again once it loads
		}
	case *runtime.EventExecutionContextCreated:
		if c := e.Context; c != nil && c.Name == world {
			var aux struct {
				FrameID string `json:"frameId"`
			}
			if json.Unmarshal([]byte(c.AuxData), &aux) == nil && aux.FrameID == string(r.tab) {
				r.ownWorld = c.UniqueID // the main frame's id is its tab's target id
			}
		}
	case *runtime.EventExecutionContextDestroyed:
		if e.ExecutionContextUniqueID == r.ownWorld {
			r.ownWorld = ""
		}
	case *runtime.EventExecutionContextsCleared:
		r.ownWorld = ""
	case *runtime.EventExceptionThrown:
		if d := e.ExceptionDetails; d != nil {
			add(&r.out.Exceptions, exceptionText(d))
		}
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, remoteText(a))
			}
			r.console(strings.Join(parts, " "))
		}
	case *cdplog.EventEntryAdded:
		en := e.Entry
		if en == nil {
			break
		}
		switch {
		case strings.HasPrefix(en.Text, "Mixed Content:"):
			add(&r.out.MixedContent, clip.Text(en.Text, 300))
		case strings.Contains(en.Text, "Content Security Policy"):
			add(&r.cspLog, clip.Text(en.Text, 300)) // the binding's report is preferred
		case en.Level == cdplog.EntryLevelError:
			if strings.Contains(en.Text, "ERR_BLOCKED_BY_CLIENT") || strings.Contains(en.Text, "ERR_TUNNEL_CONNECTION_FAILED") || browserOwn(en.URL) || r.own[en.NetworkRequestID] {
				break // the allowlist's doing, noted separately
			}
			t := en.Text
			if en.URL != "" && !strings.Contains(t, en.URL) {
				t += " (" + en.URL + ")"
			}
			r.console(t)
		}
	case *runtime.EventBindingCalled:
		if e.Name != binding {
			break
		}
		var m struct{ Kind, Directive, Blocked, Source string }
		if json.Unmarshal([]byte(e.Payload), &m) != nil {
			break
		}
		switch m.Kind {
		case "dom":
			r.active()
		case "csp":
			add(&r.out.CSP, clip.Text(fmt.Sprintf("violates %s: %s", m.Directive, orWord(m.Blocked, "inline")), 300))
		}
	case *page.EventJavascriptDialogOpening:
		add(&r.out.Dialogs, clip.Text(e.Message, 300))
	}
}

func (r *recorder) console(s string) {
	s = clip.Text(strings.TrimSpace(s), 300)
	if s == "" || r.consoles[s] {
		return
	}
	r.consoles[s] = true
	add(&r.out.ConsoleErrors, s)
}

// exceptionText is an uncaught exception's message and first frame.
func exceptionText(d *runtime.ExceptionDetails) string {
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
	} else if d.Exception != nil && len(d.Exception.Value) > 0 {
		msg += " " + string(d.Exception.Value)
	}
	where := d.URL
	if d.StackTrace != nil && len(d.StackTrace.CallFrames) > 0 {
		f := d.StackTrace.CallFrames[0]
		where = fmt.Sprintf("%s:%d:%d", f.URL, f.LineNumber+1, f.ColumnNumber+1)
	} else if where != "" {
		where = fmt.Sprintf("%s:%d:%d", where, d.LineNumber+1, d.ColumnNumber+1)
	}
	if where != "" {
		msg += " at " + where
	}
	return clip.Text(msg, 300)
}

func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	if o.Description != "" {
		return o.Description
	}
	return string(o.UnserializableValue)
}

// browserOwn reports a request the browser makes for itself whatever the
// page says: the favicon.
func browserOwn(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && strings.HasPrefix(u.Path, "/favicon.ico")
}

func wsAsHTTP(u string) string {
	switch {
	case strings.HasPrefix(u, "ws://"):
		return "http://" + u[len("ws://"):]
	case strings.HasPrefix(u, "wss://"):
		return "https://" + u[len("wss://"):]
	}
	return u
}

func orWord(s, w string) string {
	if s == "" {
		return w
	}
	return s
}

// Render opens rawURL in a fresh tab, waits for the page to settle within
// Config.PageTimeout and returns what it did. A page that does not settle,
// a busy script, a dialog storm or a navigation the allowlist refused are
// not errors: the result says so in Notes (and Settled). Errors are for a
// URL off the allowlist (nothing is opened), a browser that cannot start or
// died, a closed Browser, and ctx ending.
func (b *Browser) Render(ctx context.Context, rawURL string) (crawl.Rendered, error) {
	return b.open(ctx, rawURL, nil, nil)
}

// Submit opens pageURL as Render does, then fills the form f names (its
// action and method) as f says and submits it as a user would
// (requestSubmit, validation off), and reports the page the submission led
// to once it settles, all within one page budget. The submission's
// requests pass the same fences as every other. A page without that form
// is not an error: Submitted is false and a note says so.
func (b *Browser) Submit(ctx context.Context, pageURL string, f crawl.FormFill) (crawl.Rendered, error) {
	return b.open(ctx, pageURL, &f, nil)
}

// submitJS fills and submits a form; its argument is a JSON FormFill.
const submitJS = `((a) => {
  const f = Array.from(document.forms).find(f => f.action === a.Action && (f.getAttribute('method') || 'get').toUpperCase() === a.Method);
  if (!f) return 'no form';
  for (const el of Array.from(f.elements)) {
    if (!el.name || el.disabled || el.readOnly) continue;
    const t = (el.type || '').toLowerCase();
    if (el.tagName === 'TEXTAREA' || t === 'text' || t === 'search' || t === '') el.value = a.Text.split('{field}').join(el.name);
    else if (t === 'email') el.value = 'qa@example.test';
    else if (t === 'url') el.value = 'https://example.test/';
  }
  f.noValidate = true;
  if (f.requestSubmit) f.requestSubmit(); else f.submit();
  return 'submitted';
})`

func (b *Browser) open(ctx context.Context, rawURL string, form *crawl.FormFill, sess *Session) (crawl.Rendered, error) {
	out := crawl.Rendered{URL: rawURL}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return out, fmt.Errorf("render %s: not an http(s) URL", rawURL)
	}
	if err := b.cfg.Allow(rawURL); err != nil {
		return out, fmt.Errorf("render %s: %w", rawURL, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return out, ErrClosed
	}
	if b.tainted != nil {
		return out, fmt.Errorf("render %s: a signed-in render's cookies could not be cleared (%v): the browser renders nothing more", rawURL, b.tainted)
	}
	if err := b.start(); err != nil {
		return out, err
	}
	start := time.Now()
	defer func() { out.Elapsed = time.Since(start) }()

	tctx, tcancel := chromedp.NewContext(b.bctx)
	// Closing a tab waits for Chromium to drop it (up to half a second):
	// done in the background, and Close waits for every one.
	defer func() {
		b.closing.Add(1)
		go func() { defer b.closing.Done(); tcancel() }()
	}()
	if sess != nil {
		// What the signed-in pages set in the cookie jar goes with them:
		// no later render carries anything of the session. Runs before the
		// tab is closed (deferred after it).
		defer func() {
			cctx, cancel := context.WithTimeout(tctx, 5*time.Second)
			defer cancel()
			if _, err := chromedp.Call(cctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
				b.tainted = err // fail closed: no render after it
			}
		}()
	}
	rec := &recorder{out: &out, allow: b.cfg.Allow, byID: map[network.RequestID]int{}, inflight: map[network.RequestID]flight{}, workers: map[network.RequestID]bool{}, apart: map[network.RequestID]bool{}, consoles: map[string]bool{}, own: map[network.RequestID]bool{}, last: time.Now(), created: b.cfg.Created, session: sess}
	// Opening the tab (chromedp.Listen opens it, on tctx: the tab lives
	// as long as tctx) and setting it up are bounded by tabBudget and
	// ended by ctx, apart from the page's budget.
	tabBy := time.Now().Add(tabBudget)
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Listen(tctx, rec.on) }()
	tabTimer := time.NewTimer(tabBudget)
	select {
	case err = <-opened:
	case <-tabTimer.C:
		err = fmt.Errorf("no tab within %s", tabBudget)
	case <-ctx.Done():
		err = ctx.Err()
	}
	tabTimer.Stop()
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	if err != nil {
		return out, fmt.Errorf("render %s: open tab: %w", rawURL, err)
	}
	rec.mu.Lock()
	rec.tab = chromedp.FromContext(tctx).Target.TargetID
	rec.mu.Unlock()
	setup := func(ctx context.Context, t *chromedp.Target) error {
		steps := []func() error{
			func() error {
				_, err := cdp.Call(ctx, t, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
				return err
			},
			func() error { _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); return err },
			func() error {
				_, err := cdp.Call(ctx, t, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
				return err
			},
			func() error { _, err := cdp.Call(ctx, t, page.Enable, page.EnableParams{}); return err },
			func() error { _, err := cdp.Call(ctx, t, runtime.Enable, cdp.Empty{}); return err },
			func() error { _, err := cdp.Call(ctx, t, cdplog.Enable, cdp.Empty{}); return err },
			func() error {
				_, err := cdp.Call(ctx, t, runtime.AddBinding, runtime.AddBindingParams{Name: binding, ExecutionContextName: world})
				return err
			},
			func() error {
				_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: observer, WorldName: world})
				return err
			},
			func() error { return addCanaryHook(ctx, t) },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	}
	sctx, scancel := context.WithDeadline(tctx, tabBy)
	stopS := context.AfterFunc(ctx, scancel)
	err = chromedp.Do(sctx, chromedp.Func(setup))
	stopS()
	scancel()
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	if err != nil {
		return out, fmt.Errorf("render %s: set up the tab: %w", rawURL, err)
	}

	// The page's budget, on the tab's context (commands need it) and ended
	// early by the caller's ctx. It starts once the tab is open and set
	// up: a loaded machine's (or a jailed browser's) slow tab takes
	// nothing from the page.
	start = time.Now()
	pctx, pcancel := context.WithDeadline(tctx, start.Add(b.cfg.PageTimeout))
	defer pcancel()
	defer context.AfterFunc(ctx, pcancel)()
	// Paused requests and dialogs need commands: served off the reader
	// goroutine, each paused request on its own (pacing may wait).
	var wg sync.WaitGroup
	defer wg.Wait()
	hctx, hcancel := context.WithCancel(tctx)
	defer hcancel()
	paused := chromedp.Events(hctx, fetch.RequestPaused)
	dialogs := chromedp.Events(hctx, page.JavascriptDialogOpening)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev, err := range paused {
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.decide(hctx, pctx, rec, ev)
			}()
		}
	}()
	go func() {
		defer wg.Done()
		for _, err := range dialogs {
			if err != nil {
				return
			}
			dctx, cancel := context.WithTimeout(hctx, 2*time.Second)
			chromedp.Call(dctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			cancel()
		}
	}()

	settleBy := time.Now().Add(b.cfg.PageTimeout - min(domReserve, b.cfg.PageTimeout/4))
	nctx, ncancel := context.WithDeadline(pctx, settleBy)
	nav, err := chromedp.Call(nctx, page.Navigate, page.NavigateParams{URL: rawURL})
	ncancel()
	switch {
	case ctx.Err() != nil:
		return out, ctx.Err()
	case err != nil:
		out.Notes = append(out.Notes, fmt.Sprintf("the page did not start loading within the %s page budget (%v)", b.cfg.PageTimeout, clip.Text(err.Error(), 120)))
	case nav.ErrorText != "":
		out.Notes = append(out.Notes, "navigation failed: "+nav.ErrorText)
	}
	if err == nil && nav.ErrorText == "" {
		b.settle(pctx, rec, settleBy)
		if form != nil && rec.isSettled() {
			b.submit(pctx, rec, *form, settleBy)
		}
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	b.readDOM(tctx, rec, start.Add(b.cfg.PageTimeout))
	hcancel()
	rec.mu.Lock()
	if len(out.CSP) == 0 {
		out.CSP = rec.cspLog
	}
	if rec.blocked > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d requests refused: off the fetch allowlist or not paced in time", rec.blocked))
	}
	if rec.held > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d writes held inside the browser (the dial or the run's write budget)", rec.held))
	}
	if rec.signOuts > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d sign-out requests refused (a signed-in render never ends its session)", rec.signOuts))
	}
	rec.mu.Unlock()
	if n := len(out.Dialogs); n > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d dialogs opened and dismissed", n))
	}
	// Copy under the lock, and send events that arrive until the tab
	// closes to a result nobody reads.
	rec.mu.Lock()
	res := out
	res.Requests = append([]crawl.Request(nil), out.Requests...)
	rec.out = &crawl.Rendered{}
	rec.byID = map[network.RequestID]int{} // indexes into the result's requests, not this one's
	rec.mu.Unlock()
	res.Elapsed = time.Since(start)
	return res, nil
}

func (r *recorder) isSettled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Settled
}

// submit fills and submits the form on the settled page, then waits for
// the page it leads to.
func (b *Browser) submit(ctx context.Context, rec *recorder, f crawl.FormFill, deadline time.Time) {
	arg, _ := json.Marshal(f)
	// Marked before the script runs: the submission's document request
	// may arrive before its answer does.
	rec.mu.Lock()
	rec.submitted, rec.submittedAt, rec.submitDoc = true, time.Now(), ""
	rec.mu.Unlock()
	ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
	res, err := chromedp.Call(ectx, runtime.Evaluate, runtime.EvaluateParams{Expression: submitJS + "(" + string(arg) + ")", ReturnByValue: ptr(true)})
	cancel()
	var got string
	if err == nil && res.Result != nil {
		json.Unmarshal(res.Result.Value, &got)
	}
	rec.mu.Lock()
	if got != "submitted" {
		why := got
		if err != nil {
			why = err.Error()
		} else if res.ExceptionDetails != nil {
			why = res.ExceptionDetails.Text
		}
		rec.out.Notes = append(rec.out.Notes, fmt.Sprintf("form %s %s not submitted: %s", f.Method, f.Action, clip.Text(why, 120)))
		rec.submitted, rec.submitDoc = false, ""
		rec.mu.Unlock()
		return
	}
	rec.out.Submitted, rec.out.Settled = true, false
	rec.last = time.Now()
	rec.mu.Unlock()
	b.settle(ctx, rec, deadline)
}

// decide continues a paused request the allowlist takes, once its pacing
// slot comes, and fails any other.
func (b *Browser) decide(hctx, pctx context.Context, rec *recorder, ev fetch.EventRequestPaused) {
	if ev.Request == nil {
		return
	}
	if atResponse(ev) {
		// A request followed by the Fetch domain (workers.go) answered:
		// decided at its request stage already.
		rec.followAnswered(ev, "")
		cctx, cancel := context.WithTimeout(hctx, 5*time.Second)
		defer cancel()
		chromedp.Call(cctx, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: ev.RequestID})
		return
	}
	follow := rec.followPaused(ev)
	err := b.cfg.Allow(ev.Request.URL)
	signOut := false
	if err == nil && rec.session != nil && rec.session.refused(ev.Request.URL) {
		err, signOut = ErrSignOut, true
	}
	write := err == nil && isWrite(ev.Request.Method)
	if err == nil && b.cfg.Pace != nil {
		// Bounded by the page budget, and ended with the render.
		wctx, cancel := context.WithCancel(pctx)
		stop := context.AfterFunc(hctx, cancel)
		err = b.cfg.Pace(wctx, ev.Request.URL)
		stop()
		cancel()
	}
	held := false
	if err == nil && write {
		// Asked once its slot came, so a write is counted only when it
		// is about to be sent; the grant spares it a second ask at the
		// proxy.
		if err = b.write(Write{Method: ev.Request.Method, URL: ev.Request.URL, Via: "page"}); err == nil {
			b.grants.add(ev.Request.Method, ev.Request.URL)
		}
		held = err != nil
	}
	cctx, cancel := context.WithTimeout(hctx, 5*time.Second)
	defer cancel()
	if err == nil {
		cont := fetch.ContinueRequestParams{RequestID: ev.RequestID}
		if follow {
			cont.InterceptResponse = ptr(true)
		}
		if rec.session != nil && rec.session.covers(ev.Request.URL) {
			cont.Headers = rec.session.headers(ev.Request.Headers)
		}
		chromedp.Call(cctx, fetch.ContinueRequest, cont)
		return
	}
	if follow {
		rec.followAnswered(ev, "net::ERR_BLOCKED_BY_CLIENT") // as the tab reports its own
	}
	rec.mu.Lock()
	switch {
	case signOut:
		rec.signOuts++
	case held:
		rec.held++
	default:
		rec.blocked++
	}
	rec.mu.Unlock()
	chromedp.Call(cctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

// settle waits until the page is quiet (loaded, nothing in flight, no DOM
// change for Config.Quiet) or the deadline; it notes why it stopped early.
func (b *Browser) settle(ctx context.Context, rec *recorder, deadline time.Time) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rec.mu.Lock()
		quiet := rec.loaded && len(rec.inflight) == 0 && time.Since(rec.last) >= b.cfg.Quiet &&
			(!rec.submitted || rec.submitDoc != "" || time.Since(rec.submittedAt) >= submitGrace)
		loaded, inflight, unanswered := rec.loaded, len(rec.inflight), rec.unanswered
		rec.mu.Unlock()
		if quiet && b.stillQuiet(ctx, rec, deadline) {
			rec.mu.Lock()
			rec.out.Settled = true
			rec.mu.Unlock()
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			why := "the DOM kept changing"
			switch {
			case !loaded:
				why = "the load event never fired (a script kept the page busy, or a resource never finished)"
			case inflight > 0:
				why = fmt.Sprintf("%d requests were still in flight", inflight)
			case unanswered:
				why = "its main thread stopped answering (a script kept it busy)"
			}
			rec.mu.Lock()
			rec.out.Notes = append(rec.out.Notes, fmt.Sprintf("the page did not settle within the %s page budget: %s", b.cfg.PageTimeout, why))
			rec.mu.Unlock()
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
}

// stillQuiet confirms a page that reads quiet by our clock with one turn
// of its event loop: no report for Config.Quiet also means a renderer the
// machine starved (a loaded CI host), whose page kept changing its DOM
// all along. A timer set now fires after the page's overdue ones, and
// what they change is reported (the binding's event reaches the recorder
// before the answer: chromedp.Listen sees events in order). It reports
// false when activity came in meanwhile, and when the page did not answer
// within a second: a main thread that does not answer (a starved
// renderer, a script that loops) is not a quiet page, and the settle
// loop asks again. The timer is set in fleetd's own world of the page
// (evalParams): a page that replaces its setTimeout still answers.
func (b *Browser) stillQuiet(ctx context.Context, rec *recorder, deadline time.Time) bool {
	asked := time.Now()
	by := asked.Add(time.Second)
	if deadline.Before(by) {
		by = deadline
	}
	tctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	_, err := chromedp.Call(tctx, runtime.Evaluate, rec.evalParams(runtime.EvaluateParams{
		Expression: `new Promise(r => setTimeout(r, 0))`, AwaitPromise: ptr(true),
	}))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.unanswered = err != nil
	return err == nil && !rec.last.After(asked)
}

// readDOM serializes the document and reads its URL, bounded: a script
// that loops keeps the page's main thread, and the read gives up.
func (b *Browser) readDOM(tctx context.Context, rec *recorder, deadline time.Time) {
	if least := time.Now().Add(300 * time.Millisecond); deadline.Before(least) {
		deadline = least
	}
	ctx, cancel := context.WithDeadline(tctx, deadline)
	defer cancel()
	res, err := chromedp.Call(ctx, runtime.Evaluate, rec.evalParams(runtime.EvaluateParams{
		Expression:    `JSON.stringify({url: location.href, html: (document.doctype ? '<!DOCTYPE html>\n' : '') + (document.documentElement ? document.documentElement.outerHTML : '')})`,
		ReturnByValue: ptr(true),
		Timeout:       runtime.TimeDelta(max(200, time.Until(deadline).Milliseconds())),
	}))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if err != nil || res.Result == nil || res.ExceptionDetails != nil {
		why := "the page's script kept it busy"
		if err == nil && res.ExceptionDetails != nil {
			why = res.ExceptionDetails.Text
		}
		rec.out.Notes = append(rec.out.Notes, "the rendered DOM could not be read: "+why)
		return
	}
	var s string
	var v struct{ URL, HTML string }
	if json.Unmarshal(res.Result.Value, &s) != nil || json.Unmarshal([]byte(s), &v) != nil {
		rec.out.Notes = append(rec.out.Notes, "the rendered DOM could not be read: an unexpected answer")
		return
	}
	rec.out.FinalURL = v.URL
	if len(v.HTML) > b.cfg.MaxHTML {
		v.HTML = v.HTML[:b.cfg.MaxHTML]
		rec.out.Notes = append(rec.out.Notes, fmt.Sprintf("the rendered DOM was cut at %d bytes", b.cfg.MaxHTML))
	}
	rec.out.HTML = v.HTML
}

// evalParams has p evaluated in fleetd's own world of the tab's document
// when Chromium has reported it, else in the page's: the DOM and the event
// loop are the page's either way, the globals (setTimeout, JSON) ours.
func (r *recorder) evalParams(p runtime.EvaluateParams) runtime.EvaluateParams {
	r.mu.Lock()
	p.UniqueContextID = r.ownWorld
	r.mu.Unlock()
	return p
}

func ptr[T any](v T) *T { return &v }
