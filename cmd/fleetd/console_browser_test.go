package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/qafleet/fleetd/chain"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// xssSummary is a finding summary a hostile platform page could make a
// probe quote, or a stranger post.
const xssSummary = `<img src=x onerror=alert(1)>`

// findChromium returns the Chromium binary, or "" when there is none. In
// CI (CI set) its absence fails the test instead: .ci/run installs it.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLEETD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH: .ci/run installs Debian's chromium package for the console's browser tests")
	}
	t.Skip("no chromium on PATH: apt-get install -y chromium to run the console's browser tests")
	return ""
}

// browser starts headless Chromium with the flags this machine needs (no
// sandbox as root, no background networking on a closed network) and a
// fresh profile, and returns a tab's context. Dialogs are counted and
// dismissed; console messages are collected.
type browser struct {
	ctx      context.Context
	dialogs  atomic.Int32
	mu       sync.Mutex
	messages []string
}

func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1280, 1000))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	b := &browser{ctx: ctx}
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			b.dialogs.Add(1)
			b.note("dialog: " + ev.Message)
			go chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
				return err
			}))
		}
	}()
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			b.note(fmt.Sprintf("console %v", m))
		}
	}()
	return b
}

func (b *browser) note(s string) {
	b.mu.Lock()
	b.messages = append(b.messages, s)
	b.mu.Unlock()
}

func (b *browser) log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.messages...)
}

// run runs actions with a deadline.
func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// screenshots saves a full-page screenshot of each page into dir.
func (b *browser) screenshots(t *testing.T, base, dir string) {
	os.MkdirAll(dir, 0o755)
	for _, p := range []string{"", "runs", "fleet", "feed"} {
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		png, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
			if _, err := chromedp.Navigate(base+p)(ctx, tg); err != nil {
				return nil, err
			}
			return chromedp.FullScreenshot(100)(ctx, tg)
		})
		cancel()
		if err != nil {
			t.Logf("screenshot of /%s: %v", p, err)
			continue
		}
		name := filepath.Join(dir, "console-"+map[bool]string{true: "health", false: p}[p == ""]+".png")
		os.WriteFile(name, png, 0o644)
	}
	// The Health page at a phone's width.
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		if _, err := chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))(ctx, tg); err != nil {
			return nil, err
		}
		if _, err := chromedp.Navigate(base)(ctx, tg); err != nil {
			return nil, err
		}
		return chromedp.CaptureScreenshot()(ctx, tg)
	}); err == nil {
		os.WriteFile(filepath.Join(dir, "console-health-phone.png"), png, 0o644)
	}
	t.Logf("screenshots of every page in %s", dir)
}

// postFinding appends a finding to the fixture's log as the fleet identity.
func postFinding(t *testing.T, f *fleetFixture, text string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := chain.LoadKey(f.dn.Info.FleetKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.dn.Log.SubmitFor(ctx, id, f.dn.Sponsor, text)
	if err != nil {
		t.Fatalf("post %q: %v", text, err)
	}
	return s.Index
}

// TestConsoleInBrowser drives the console in headless Chromium against a
// daemon on the embedded dev chain and the testbed: the ranked clusters,
// the live feed, the dial and the kill switch from the page, an XSS
// payload shown as text, and controls refused without the token.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel() // its own chain and data dir; long, mostly waiting: overlaps the others
	if testing.Short() {
		t.Skip("starts a daemon, a chain and a browser")
	}
	exe := findChromium(t)
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{
		"smoke": {Every: 2 * time.Second}, "security": {Every: time.Hour}, "ux": {Every: time.Hour},
		"perf": {Every: time.Hour}, "fuzz": {Every: time.Hour},
	})
	xssIndex := postFinding(t, f, "qa/v1 source=qa-security sev=high surface=face\n"+xssSummary)
	postFinding(t, f, "qa/v1 source=qa-ux sev=low surface=docs\nDead link in llms.txt: /docs/getting-started answers 404")

	var logs syncBuffer
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &logs, configPath: f.config}
	cfg, err := LoadConfig(f.config)
	if err != nil {
		t.Fatal(err)
	}
	a.cfg = cfg
	if _, err := (findingsCommands{a}).runTriage(context.Background(), a.resolve(&connFlags{cmd: &cobra.Command{}}), nil); err != nil {
		t.Fatalf("first triage: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := serviceCommands{a}.startDaemon(ctx, daemonOptions{logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown(30 * time.Second) }) // after the screenshots (cleanups run last first)
	base := d.ConsoleURL()
	token, err := serviceCommands{a}.httpToken(false)
	if err != nil {
		t.Fatalf("the daemon made no token: %v", err)
	}

	b := newBrowser(t, exe)
	t.Cleanup(func() {
		dir := os.Getenv("FLEETD_SCREENSHOTS")
		if !t.Failed() && dir == "" {
			return
		}
		if dir == "" {
			dir, _ = os.MkdirTemp("", "fleetd-console-screenshots-")
		}
		b.screenshots(t, base, dir)
		t.Logf("browser log:\n%s\ndaemon log tail:\n%s", strings.Join(b.log(), "\n"), tail(logs.String(), 20))
	})

	t.Run("health lists the ranked clusters and shows the payload as text", func(t *testing.T) {
		b.run(t, "open health", chromedp.Navigate(base), chromedp.WaitVisible("table.clusters"))
		table := b.text(t, "table.clusters")
		for _, want := range []string{xssSummary, "Dead link in llms.txt"} {
			if !strings.Contains(table, want) {
				t.Errorf("the cluster table lacks %q:\n%s", want, table)
			}
		}
		if n := eval[int](t, b, `document.querySelectorAll("table.clusters tbody tr[data-cluster]").length`); n != 2 {
			t.Errorf("%d ranked rows, want 2", n)
		}
		if ranks := eval[string](t, b, `[...document.querySelectorAll("table.clusters tbody tr td:first-child")].map(td => td.textContent).join(",")`); ranks != "1,2" {
			t.Errorf("ranks %q", ranks)
		}
		if n := eval[int](t, b, `document.images.length`); n != 0 {
			t.Errorf("%d img elements: the payload became markup", n)
		}
		// Its cluster page too, where the entry text is shown whole.
		b.run(t, "open the cluster", chromedp.Click(`tr[data-cluster] a.t`), chromedp.WaitVisible("table.entries"))
		entries := b.text(t, "table.entries")
		if !strings.Contains(entries, xssSummary) || !strings.Contains(entries, fmt.Sprint(xssIndex)) {
			t.Errorf("entries table:\n%s", entries)
		}
		if n := eval[int](t, b, `document.images.length`); n != 0 {
			t.Errorf("%d img elements on the cluster page", n)
		}
		time.Sleep(500 * time.Millisecond)
		if n := b.dialogs.Load(); n != 0 {
			t.Errorf("%d dialogs fired", n)
		}
	})

	t.Run("controls without the token are refused", func(t *testing.T) {
		b.run(t, "open fleet", chromedp.Navigate(base+"fleet"), chromedp.WaitVisible("#dial"))
		if n := eval[int](t, b, `document.querySelectorAll("#dial-set, #pause").length`); n != 0 {
			t.Error("control forms are shown before logging in")
		}
		for _, path := range []string{"api/pause", "api/dial", "api/specialists/smoke/run", "api/triage"} {
			status := eval[int](t, b, `fetch("/`+path+`", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "rung=propose&reason=x"}).then(r => r.status)`)
			if status != http.StatusUnauthorized {
				t.Errorf("POST /%s from the page without a token: %d, want 401", path, status)
			}
		}
		if p, _ := fleet.NewControl(f.dataDir).Paused(); p {
			t.Error("paused without a token")
		}
		if dl, _ := fleet.NewControl(f.dataDir).Dial(); dl != fleet.Observe {
			t.Errorf("dial %s without a token", dl)
		}
	})

	t.Run("log in", func(t *testing.T) {
		b.run(t, "log in", chromedp.Navigate(base+"login?back=/fleet"), chromedp.WaitVisible("#token"),
			chromedp.SendKeys("#token", token), chromedp.SendKeys("#name", "browser-test"),
			chromedp.Click("#login"), chromedp.WaitVisible("#flash"), chromedp.WaitVisible("#dial-set"))
		if got := b.text(t, "#flash"); !strings.Contains(got, "logged in as browser-test") {
			t.Errorf("flash %q", got)
		}
		if cookies := eval[string](t, b, `document.cookie`); strings.Contains(cookies, "fleetd_session") {
			t.Error("the session cookie is readable by scripts (not HttpOnly)")
		}
	})

	t.Run("a new finding appears in the live feed without a reload", func(t *testing.T) {
		b.run(t, "open feed", chromedp.Navigate(base+"feed"), chromedp.WaitVisible("#feed"))
		b.run(t, "feed connected", chromedp.Poll[chromedp.Void](`document.getElementById("feed-state").textContent === "live"`, chromedp.WithPollingTimeout(20*time.Second)))
		eval[chromedp.Void](t, b, `window.__sameDocument = true`)
		title := fmt.Sprintf("Live feed canary %d: the registry accepts a name twice", time.Now().UnixNano())
		postFinding(t, f, "qa/v1 source=qa-smoke sev=medium surface=registry\n"+title)
		b.run(t, "the finding arrives", chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById("feed").textContent.includes(%q)`, title), chromedp.WithPollingTimeout(40*time.Second)))
		if !eval[bool](t, b, `window.__sameDocument === true`) {
			t.Error("the page was reloaded")
		}
	})

	t.Run("setting the dial from the page", func(t *testing.T) {
		b.run(t, "set dial", chromedp.Navigate(base+"fleet"), chromedp.WaitVisible("#dial-set"),
			chromedp.SetValue("#dial-rung", "exercise"), chromedp.SendKeys("#dial-reason", "browser test: let smoke exercise"),
			chromedp.Click("#dial-set"), chromedp.WaitVisible("#flash"))
		if got := b.text(t, "#dial"); got != "exercise" {
			t.Errorf("the page shows dial %q", got)
		}
		raw, _ := os.ReadFile(filepath.Join(f.dataDir, "autonomy"))
		if string(raw) != "exercise\n" {
			t.Errorf("<data_dir>/autonomy holds %q", raw)
		}
		audit, _ := fleet.NewControl(f.dataDir).Audit()
		last := audit[len(audit)-1]
		if last.Action != "dial" || last.From != "observe" || last.To != "exercise" || last.Reason != "browser test: let smoke exercise" || !strings.HasPrefix(last.User, "browser-test via console from 127.0.0.1") {
			t.Errorf("last audit record %+v", last)
		}
	})

	t.Run("pausing from the page stops new runs", func(t *testing.T) {
		b.run(t, "pause", chromedp.Navigate(base+"fleet"), chromedp.WaitVisible("#pause"), chromedp.Click("#pause"), chromedp.WaitVisible("#resume"))
		if got := b.text(t, "#paused"); got != "paused" {
			t.Errorf("the page shows %q", got)
		}
		if p, _ := fleet.NewControl(f.dataDir).Paused(); !p {
			t.Fatal("the kill switch file is not there")
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(d.Runner().Running()) > 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond) // a run in flight stops at its next tool call
		}
		runs := func() int {
			files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
			return len(files)
		}
		before, skippedBefore := runs(), d.Scheduler().Stats()["smoke"].Skipped
		time.Sleep(7 * time.Second) // smoke fires every 2s
		st := d.Scheduler().Stats()["smoke"]
		if after := runs(); after != before {
			t.Errorf("%d new runs while paused", after-before)
		}
		if st.Skipped <= skippedBefore || st.LastSkip != "paused" {
			t.Errorf("smoke's trigger did not fire and get refused while paused: %+v", st)
		}
		// Run now is refused while paused, with the runner's reason.
		// (The page still shows the pause's flash: wait for the new one.)
		b.run(t, "run now while paused", chromedp.Navigate(base+"fleet"), chromedp.WaitVisible("#resume"),
			chromedp.Click(`tr[data-specialist="smoke"] button.run-now`))
		b.waitFlash(t, "smoke not started: paused")
		b.run(t, "resume", chromedp.Click("#resume"), chromedp.WaitVisible("#pause"))
		if p, _ := fleet.NewControl(f.dataDir).Paused(); p {
			t.Error("still paused after resume")
		}
		audit, _ := fleet.NewControl(f.dataDir).Audit()
		if n := len(audit); n < 2 || audit[n-2].Action != "pause" || audit[n-1].Action != "resume" {
			t.Errorf("audit tail %+v", audit[max(0, n-2):])
		}
	})

	t.Run("run now, mark a finding and triage from the page", func(t *testing.T) {
		startFrom(t, b, base+"fleet", `tr[data-specialist="ux"] button.run-now`, "ux started")
		// Mark only once the run's findings are in the report: a dead link
		// it posts after the mark, with a repro the posted one lacked, would
		// rightly regress the false positive.
		rep := reportAfterRun(t, b, d, f, base, "ux")
		var id string
		for _, c := range rep.Clusters {
			if strings.HasPrefix(c.Title, "Dead link in llms.txt") {
				id = c.ID
			}
		}
		if id == "" {
			t.Fatalf("no dead-link cluster in %+v", rep.Clusters)
		}
		b.run(t, "mark false positive", chromedp.Navigate(base+"clusters/"+id), chromedp.WaitVisible("#mark"),
			chromedp.Click(`input[name="what"][value="false-positive"]`), chromedp.Click("#mark"), chromedp.WaitVisible("#flash"))
		if got := b.text(t, "#flash"); !strings.Contains(got, "correction posted as entry") {
			t.Fatalf("mark: flash %q", got)
		}
		startFrom(t, b, base, "#triage-now", "triage started")
		deadline := time.Now().Add(40 * time.Second)
		for {
			rep, _ := readReport(t, base)
			state := ""
			for _, c := range rep.Clusters {
				if c.ID == id {
					state = c.State
				}
			}
			if state == "false-positive" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the marked cluster is %q after triage", state)
			}
			time.Sleep(500 * time.Millisecond)
		}
		// An accepted risk, with its reason and expiry, from the same form:
		// after the next triage the cluster page shows it and its history.
		var other string
		for _, c := range rep.Clusters {
			if c.ID != id && (c.State == "open" || c.State == "regressed") && !strings.Contains(c.Title, "<") {
				other = c.ID
				break
			}
		}
		if other == "" {
			t.Fatalf("no other open cluster in %+v", rep.Clusters)
		}
		b.run(t, "accept a risk", chromedp.Navigate(base+"clusters/"+other), chromedp.WaitVisible("#mark"),
			chromedp.Click(`input[name="what"][value="accepted-risk"]`),
			chromedp.SendKeys(`input[name="reason"]`, "only the admin network reaches it"),
			chromedp.SendKeys(`input[name="until"]`, "720h"),
			chromedp.Click("#mark"), chromedp.WaitVisible("#flash"))
		if got := b.text(t, "#flash"); !strings.Contains(got, "marked accepted-risk until 720h: correction posted as entry") {
			t.Fatalf("accept a risk: flash %q", got)
		}
		startFrom(t, b, base, "#triage-now", "triage started")
		deadline = time.Now().Add(40 * time.Second)
		for {
			rep, _ := readReport(t, base)
			state := ""
			for _, c := range rep.Clusters {
				if c.ID == other {
					state = c.State
				}
			}
			if state == "accepted-risk" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the accepted cluster is %q after triage", state)
			}
			time.Sleep(500 * time.Millisecond)
		}
		b.run(t, "the accepted risk's page", chromedp.Navigate(base+"clusters/"+other), chromedp.WaitVisible("table.corrections"))
		if got := b.text(t, "table.corrections"); !strings.Contains(got, "accepted-risk") || !strings.Contains(got, "only the admin network reaches it") {
			t.Errorf("the correction history reads %q", got)
		}
		audit, _ := fleet.NewControl(f.dataDir).Audit()
		var actions []string
		for _, r := range audit {
			actions = append(actions, r.Action)
		}
		got := strings.Join(actions, ",")
		for _, want := range []string{"run", "mark", "triage"} {
			if !strings.Contains(got, want) {
				t.Errorf("audit actions %s lack %s", got, want)
			}
		}
	})

	t.Run("the HTML report file is styled under its own CSP", func(t *testing.T) {
		res, err := findingsCommands{a}.runTriage(context.Background(), a.resolve(&connFlags{cmd: &cobra.Command{}}), nil)
		if err != nil && !strings.Contains(err.Error(), "in use") {
			t.Fatal(err)
		}
		rep := res.Report
		if err != nil { // the daemon's triage holds the store: read the saved report
			if rep, err = triage.LoadReport(a.reportsDir()); err != nil {
				t.Fatal(err)
			}
		}
		path, err := findingsCommands{a}.writeHTMLReport(rep)
		if err != nil {
			t.Fatal(err)
		}
		b.run(t, "open the file", chromedp.Navigate("file://"+path), chromedp.WaitVisible("table.clusters"))
		if bg := eval[string](t, b, `getComputedStyle(document.querySelector("header.top")).backgroundColor`); bg != "rgb(29, 35, 48)" {
			t.Errorf("the inline stylesheet was not applied (header background %q): its CSP hash is wrong", bg)
		}
		if !strings.Contains(b.text(t, "table.clusters"), xssSummary) || eval[int](t, b, `document.images.length`) != 0 {
			t.Error("the payload is not text in the file")
		}
	})

	t.Run("no dialog and no policy violation on any page", func(t *testing.T) {
		for _, p := range []string{"", "runs", "fleet", "feed"} {
			b.run(t, "open /"+p, chromedp.Navigate(base+p), chromedp.WaitReady("main"))
		}
		var runID string
		if files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl")); len(files) > 0 {
			runID = strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
			b.run(t, "open a run", chromedp.Navigate(base+"runs/"+runID), chromedp.WaitVisible("#timeline"))
		}
		time.Sleep(time.Second)
		if n := b.dialogs.Load(); n != 0 {
			t.Errorf("%d dialogs", n)
		}
		for _, m := range b.log() {
			if strings.Contains(m, "Content Security Policy") || strings.Contains(m, "Refused to") {
				t.Errorf("browser: %s", m)
			}
		}
		// The JSON behind the pages answers too.
		resp, err := http.Get(base + "api/fleet")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var fl struct {
			Dial        string `json:"dial"`
			Specialists []struct{ Name string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&fl); err != nil || fl.Dial != "exercise" || len(fl.Specialists) != 5 {
			t.Errorf("/api/fleet: %+v %v", fl, err)
		}
	})
}

// readReport reads /api/report.
// reportAfterRun waits for the specialist's run to end and its findings to
// be on the log, triages from the page, and returns the first report that
// covers every entry the log held by then.
func reportAfterRun(t *testing.T, b *browser, d *fleetdaemon.Daemon, f *fleetFixture, base, specialist string) struct {
	Clusters []struct{ ID, Title, State string }
} {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for slices.Contains(d.Runner().Running(), specialist) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still running after 60s", specialist)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for d.Env().Poster != nil {
		items, _ := d.Env().Poster.Pending()
		if len(items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d findings still in the outbox 60s after %s's run", len(items), specialist)
		}
		time.Sleep(300 * time.Millisecond)
	}
	n, err := f.dn.Log.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	head := func() uint64 {
		var r struct{ Head uint64 }
		resp, err := http.Get(base + "api/report")
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&r)
		return r.Head
	}
	if head() < n {
		startFrom(t, b, base, "#triage-now", "triage started")
	}
	for deadline = time.Now().Add(60 * time.Second); head() < n; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the report covers entries [0, %d) of %d, 60s after triage started", head(), n)
		}
	}
	rep, err := readReport(t, base)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func readReport(t *testing.T, base string) (struct {
	Clusters []struct{ ID, Title, State string }
}, error) {
	t.Helper()
	var rep struct {
		Clusters []struct{ ID, Title, State string }
	}
	resp, err := http.Get(base + "api/report")
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	return rep, json.NewDecoder(resp.Body).Decode(&rep)
}

// startFrom clicks a run-now or triage-now button on page until the flash
// says want. smoke fires every 2s and triage on every new entry, so the
// fleet-wide cap of 2 concurrent runs, or the same run already going, may
// refuse a start for a while: that is the runner's rule, so try again.
func startFrom(t *testing.T, b *browser, page, button, want string) {
	t.Helper()
	for try := 0; ; try++ {
		b.run(t, "click "+button, chromedp.Navigate(page), chromedp.WaitVisible(button), chromedp.Click(button), chromedp.WaitVisible("#flash"))
		got := b.text(t, "#flash")
		if strings.Contains(got, want) {
			return
		}
		if (!strings.Contains(got, "concurrent runs reached") && !strings.Contains(got, "already running")) || try == 20 {
			t.Fatalf("%s: flash %q", button, got)
		}
		time.Sleep(time.Second)
	}
}

// waitFlash waits until the page (after the form post's redirect) shows a
// flash message holding want; evaluation errors while the page navigates
// are retried.
func (b *browser) waitFlash(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("flash") || {textContent: ""}).textContent`))
		cancel()
		if err == nil {
			last = got
			if strings.Contains(got, want) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no flash with %q; last %q", want, last)
}
