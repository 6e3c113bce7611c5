package fixertest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet/fleettest"
)

// Binary returns the Gitea binary and its static root (the source tree it
// was built from), or skips the test saying how to get one: FLEETD_GITEA,
// else ~/.cache/fleetd/gitea/gitea where .ci/run caches it.
func Binary(tb testing.TB) (bin, static string) {
	tb.Helper()
	bin = os.Getenv("FLEETD_GITEA")
	if bin == "" {
		if home, err := os.UserHomeDir(); err == nil {
			if p := filepath.Join(home, ".cache", "fleetd", "gitea", "gitea"); isExec(p) {
				bin = p
			}
		}
	}
	if bin == "" || !isExec(bin) {
		skipOrFail(tb, "no Gitea binary: set FLEETD_GITEA, or run .ci/run once (it builds code.gitea.io/gitea@v1.26.0 into ~/.cache/fleetd/gitea)")
	}
	static = os.Getenv("FLEETD_GITEA_STATIC")
	if static == "" {
		static = filepath.Join(filepath.Dir(bin), "src")
	}
	if _, err := os.Stat(filepath.Join(static, "options")); err != nil {
		skipOrFail(tb, fmt.Sprintf("Gitea static root %s has no options/ (set FLEETD_GITEA_STATIC to Gitea's source tree)", static))
	}
	return bin, static
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Server is a running Gitea.
type Server struct {
	URL   string // http://127.0.0.1:PORT (no trailing slash)
	User  string // the admin user, owner of the test repositories
	Token string // the admin's access token (scopes: all)
	work  string
}

// Start runs a fresh Gitea for the test and stops it at cleanup. It skips
// the test when no Gitea binary is available (Binary).
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, static := Binary(tb)
	work := tb.TempDir()
	s := &Server{User: "fleetd-admin", work: work}
	conf := filepath.Join(work, "app.ini")
	writeConf := func(port int) {
		tb.Helper()
		s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
		if err := os.WriteFile(conf, []byte(giteaINI(work, port, s.URL, static)), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	writeConf(freePort(tb))
	env := append(os.Environ(), "GITEA_WORK_DIR="+work, "GITEA_CUSTOM="+filepath.Join(work, "custom"), "HOME="+work)
	run := func(args ...string) string {
		tb.Helper()
		cmd := exec.Command(bin, append([]string{"--config", conf, "--work-path", work}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			tb.Fatalf("gitea %s: %v\n%s", args[0], err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("migrate")
	run("admin", "user", "create", "--admin", "--username", s.User, "--password", "fleetd-Test-pw-1", "--email", "admin@example.test", "--must-change-password=false")
	tok := run("admin", "user", "generate-access-token", "--username", s.User, "--token-name", "fleetd", "--scopes", "all", "--raw")
	s.Token = lastLine(tok)
	// The web server's port is picked just before it starts, and picked
	// again when it exits without answering: a port picked and released
	// here can be taken by another process before Gitea binds it (go test
	// ./... runs packages at once), and the commands above take seconds.
	for attempt := 1; ; attempt++ {
		writeConf(freePort(tb))
		err := startWeb(tb, bin, conf, work, env, s.URL)
		if err == nil {
			return s
		}
		if !errors.Is(err, errWebExited) || attempt == 3 {
			tb.Fatal(err)
		}
		tb.Logf("%v; retrying on another port", err)
	}
}

// errWebExited is startWeb's error when gitea web cannot serve, as when its
// port was taken: it then says so in its log and waits to be stopped.
var errWebExited = errors.New("gitea web could not serve")

// pollClient bounds each readiness poll: whatever else took the port may
// accept and never answer.
var pollClient = &http.Client{Timeout: 5 * time.Second}

// startWeb runs gitea web, stopped at cleanup, and waits until it answers
// at url.
func startWeb(tb testing.TB, bin, conf, work string, env []string, url string) error {
	tb.Helper()
	web := exec.Command(bin, "--config", conf, "--work-path", work, "web")
	web.Env = env
	logPath := filepath.Join(work, "web.log")
	giteaLog := filepath.Join(work, "log", "gitea.log")
	var logFrom int64 // this attempt's part of gitea.log
	if fi, err := os.Stat(giteaLog); err == nil {
		logFrom = fi.Size()
	}
	failed := func() bool {
		b, _ := os.ReadFile(giteaLog)
		return int64(len(b)) > logFrom && bytes.Contains(b[logFrom:], []byte("Failed to start server"))
	}
	logf, _ := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	web.Stdout, web.Stderr = logf, logf
	if err := web.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("gitea web: %w", err)
	}
	exited := make(chan struct{})
	go func() { web.Wait(); close(exited) }()
	stop := func() {
		web.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			web.Process.Kill()
			<-exited
		}
	}
	tb.Cleanup(func() { stop(); logf.Close() })
	// A slow start is not a failure: a process that exits or logs one ends
	// the wait at once, so the deadline only bounds a busy machine (at load
	// 59 Gitea took over a minute to answer; at load 40, niced, it had one
	// CPU-second in 3.5 minutes and answered after 4). Past 3 minutes, a
	// Gitea the machine starves (under 30 CPU-seconds) is waited for up to
	// 10; one that spent 30 CPU-seconds without answering is stuck.
	webWait := fleettest.StartWait{Wall: 3 * time.Minute, Starved: 10 * time.Minute, CPU: 30 * time.Second}
	start := time.Now()
	for {
		resp, err := pollClient.Get(url + "/api/v1/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && !failed() {
				return nil
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("%w on %s: exited %s\n%s", errWebExited, url, web.ProcessState, b)
		default:
		}
		if failed() {
			stop()
			b, _ := os.ReadFile(giteaLog)
			return fmt.Errorf("%w on %s:\n%s", errWebExited, url, b[logFrom:])
		}
		if over, why := webWait.Over(web.Process.Pid, start); over {
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("gitea web did not answer %s: %v\n%s", why, err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// giteaINI is the test server's app.ini.
func giteaINI(work string, port int, rootURL, static string) string {
	return fmt.Sprintf(`I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
APP_NAME = fleetd-test
RUN_MODE = prod
WORK_PATH = %[1]s

[database]
DB_TYPE = sqlite3
PATH = %[1]s/gitea.db

[repository]
ROOT = %[1]s/repos

[server]
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
ROOT_URL = %[3]s/
DISABLE_SSH = true
OFFLINE_MODE = true
STATIC_ROOT_PATH = %[4]s
APP_DATA_PATH = %[1]s/data
LFS_START_SERVER = false

[security]
INSTALL_LOCK = true

[service]
DISABLE_REGISTRATION = true

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = %[1]s/log

[mailer]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = channel

[cron]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false
`, work, port, rootURL, static)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// API calls the Gitea API as the admin (a human's action, not fleetd's)
// and decodes the JSON answer into out (nil: ignore). Statuses >= 300 fail
// the test unless allowed.
func (s *Server) API(tb testing.TB, method, path string, body, out any, allowed ...int) int {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.URL+"/api/v1"+path, rd)
	req.Header.Set("Authorization", "token "+s.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		ok := false
		for _, a := range allowed {
			ok = ok || a == resp.StatusCode
		}
		if !ok {
			tb.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// CreateRepo creates an empty repository owned by the admin and pushes the
// git repository at src (all branches) into it. It returns its clone URL.
func (s *Server) CreateRepo(tb testing.TB, name, src string) string {
	tb.Helper()
	s.API(tb, "POST", "/user/repos", map[string]any{"name": name, "default_branch": "main"}, nil)
	u := s.URL + "/" + s.User + "/" + name + ".git"
	cmd := exec.Command("git", "push", "--quiet", u, "refs/heads/*:refs/heads/*")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), s.GitAuthEnv()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("push %s to gitea: %v\n%s", src, err, out)
	}
	return u
}

// GitAuthEnv is git configuration (as environment) sending the admin's
// token on every request.
func (s *Server) GitAuthEnv() []string {
	cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + s.Token))
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic " + cred}
}

// Merge merges PR number through the API, as a human reviewer would.
func (s *Server) Merge(tb testing.TB, repo string, number int) {
	tb.Helper()
	path := fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", s.User, repo, number)
	for i := 0; ; i++ {
		// Gitea checks mergeability in a queue after a push; retry briefly.
		if code := s.API(tb, "POST", path, map[string]any{"Do": "merge"}, nil, 405, 409); code < 300 {
			return
		}
		if i == 50 {
			tb.Fatalf("PR %d is still not mergeable", number)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Close closes PR number without merging it, as a human would.
func (s *Server) Close(tb testing.TB, repo string, number int) {
	tb.Helper()
	s.API(tb, "PATCH", fmt.Sprintf("/repos/%s/%s/pulls/%d", s.User, repo, number), map[string]any{"state": "closed"}, nil)
}

// Proxy is a recording, fault-injecting reverse proxy in front of a server.
type Proxy struct {
	URL  string
	srv  *httptest.Server
	rp   *httputil.ReverseProxy
	mu   sync.Mutex
	log  []string
	rule func(r *http.Request) Fault
}

// Fault is what the proxy does to one request.
type Fault int

// The faults.
const (
	Pass      Fault = iota // forward it
	Status500              // answer 500 without forwarding
	Status502              // answer 502 without forwarding
	DropBody               // read part of the request body, then drop the connection
)

// NewProxy starts a proxy to target; SetRule scripts faults.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{rp: httputil.NewSingleHostReverseProxy(u)}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	tb.Cleanup(p.srv.Close)
	p.URL = p.srv.URL
	return p
}

// SetRule sets the fault rule (nil: pass everything).
func (p *Proxy) SetRule(rule func(r *http.Request) Fault) {
	p.mu.Lock()
	p.rule = rule
	p.mu.Unlock()
}

// Log returns "METHOD path" of every request seen, in order.
func (p *Proxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.log = append(p.log, r.Method+" "+r.URL.Path)
	rule := p.rule
	p.mu.Unlock()
	f := Pass
	if rule != nil {
		f = rule(r)
	}
	switch f {
	case Status500, Status502:
		code := 500
		if f == Status502 {
			code = 502
		}
		http.Error(w, `{"message":"injected fault"}`, code)
	case DropBody:
		io.CopyN(io.Discard, r.Body, 512)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// WaitFor polls cond every 100 ms until it holds or ctx ends.
func WaitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// skipOrFail skips a test that needs Gitea, or fails it when CI is set:
// .ci/run builds Gitea, so there a missing one is a broken setup.
func skipOrFail(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatal(why)
	}
	tb.Skip(why)
}
