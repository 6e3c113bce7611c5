package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/sandbox"
)

// TestRenderJailHidesKeys: the run's renderer, as runSpecialist builds it,
// with the fleet and sponsor keys made by `fleetd keys new` in the data dir
// (one named relative to the config): a page that reaches for the key
// files, the data dir and the config every way a page can gets none of
// their bytes into anything the render reports; the run record's line and
// doctor say the jail and Chromium's sandbox are on and name the hidden
// paths; the browser's profile lives in the run's jail dir and is gone
// after the run. With crawl.jail: off, doctor warns that the renderer is
// unjailed.
func TestRenderJailHidesKeys(t *testing.T) {
	exe := findChromium(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap: %v: .ci/run installs Debian's bubblewrap package", err)
		}
		t.Skipf("bwrap: %v", err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfgPath := filepath.Join(dir, "fleetd.yaml")
	if err := os.WriteFile(cfgPath, []byte("# models.gemini.api_key: AIzaConfigSecretNotForPages\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var secrets []string
	var keyFiles []string
	for _, name := range []string{"fleet.key", "sponsor.key"} {
		p := filepath.Join(data, "keys", name)
		if _, stderr, code := run(t, "", "keys", "new", "--out", p); code != 0 {
			t.Fatalf("keys new: %s", stderr)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, strings.TrimPrefix(strings.TrimSpace(string(raw)), "0x"))
		keyFiles = append(keyFiles, p)
	}
	secrets = append(secrets, "AIzaConfigSecretNotForPages")
	a := &app{dataDirFlag: data, cfg: &Config{path: cfgPath,
		Chain: ChainConfig{FleetKeyFile: "data/keys/fleet.key", SponsorKeyFile: keyFiles[1]},
		Crawl: CrawlConfig{Engine: runner.EngineBrowser, Chromium: exe, PageTimeout: 6 * time.Second}}}
	sb, err := sandbox.Open(a.sandboxDir(), sandbox.NewRunID(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()

	var page strings.Builder
	page.WriteString(`<!doctype html><body>`)
	for _, p := range append(keyFiles, data, cfgPath, filepath.Join(data, "keys")) {
		u := "file://" + p
		fmt.Fprintf(&page, `<img src=%[1]q><iframe src=%[1]q></iframe><object data=%[1]q></object><script src=%[1]q></script>
<script>fetch(%[1]q).then(r => r.text()).then(t => document.body.append('got ' + t)).catch(e => console.error('refused'))</script>`, u)
	}
	fmt.Fprintf(&page, `<script>setTimeout(() => { location.href = %q }, 50)</script></body>`, "file://"+keyFiles[0])
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page.String())
	}))
	defer site.Close()
	env := &fleetEnv{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{strings.TrimPrefix(site.URL, "http://")}}}}
	r, stop, how, err := a.crawl().Renderer(env, observeWrites(), sb.JailDir(), nil)
	if err != nil || r == nil {
		t.Fatalf("renderer: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	for _, want := range append([]string{"bwrap jail on", "Chromium sandbox on", data}, keyFiles...) {
		if !strings.Contains(how, want) {
			t.Errorf("the run record's renderer line lacks %q: %s", want, how)
		}
	}
	got, err := r.Render(context.Background(), site.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(got)
	for _, s := range secrets {
		if strings.Contains(string(out), s) {
			t.Errorf("a secret reached the render's report: %s", out)
		}
	}
	if !strings.Contains(got.HTML, "<iframe") {
		t.Errorf("the page did not render: %s", out)
	}
	if _, err := os.Stat(filepath.Join(sb.JailDir(), "browser", "profile")); err != nil {
		t.Errorf("the browser's profile is not in the run's jail dir: %v", err)
	}
	stop()
	stopped = true
	if _, err := os.Stat(filepath.Join(sb.JailDir(), "browser")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the browser's profile outlives the run: %v", err)
	}

	c := a.jailCheck()
	if !c.OK || !strings.Contains(c.Detail, "Chromium sandbox on") || !strings.Contains(c.Detail, keyFiles[0]) {
		t.Errorf("doctor's jail line: %+v", c)
	}
	a.cfg.Crawl.Jail = jailOff
	if c := a.jailCheck(); c.OK || !c.Warn || !strings.Contains(c.Detail, "bwrap jail OFF") {
		t.Errorf("doctor's jail line with crawl.jail off: %+v", c)
	}
	if _, how, err := a.crawl().Choose(); err != nil || !strings.Contains(how, "bwrap jail OFF") {
		t.Errorf("the run record's line with crawl.jail off: %q %v", how, err)
	}
	if err := (CrawlConfig{Jail: "maybe"}).validate(); err == nil || !strings.Contains(err.Error(), "crawl.jail") {
		t.Errorf("a bad crawl.jail: %v", err)
	}
}

// TestRenderJailUnavailable: where the jail cannot be built (here: bwrap
// is not on PATH), the renderer refuses: crawl.engine browser is an error
// naming the cause and the opt-out, auto turns the rendering crawl off and
// says why, and doctor's jail line says so (fatal for browser).
func TestRenderJailUnavailable(t *testing.T) {
	exe := findChromium(t)
	t.Setenv("PATH", t.TempDir())
	a := &app{dataDirFlag: t.TempDir(), cfg: &Config{Crawl: CrawlConfig{Engine: runner.EngineBrowser, Chromium: exe}}}
	env := &fleetEnv{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{"127.0.0.1:1"}}}}
	if r, _, _, err := a.crawl().Renderer(env, observeWrites(), "", nil); r != nil || err == nil || !strings.Contains(err.Error(), "bubblewrap") || !strings.Contains(err.Error(), "crawl.jail: off") {
		t.Errorf("engine browser without bwrap: renderer %v, err %v", r, err)
	}
	if c := a.jailCheck(); !c.Fatal || !strings.Contains(c.Detail, "bubblewrap") {
		t.Errorf("doctor: %+v", c)
	}
	a.cfg.Crawl.Engine = runner.EngineAuto
	r, _, how, err := a.crawl().Renderer(env, observeWrites(), "", nil)
	if r != nil || err != nil || !strings.Contains(how, "rendering crawl off") || !strings.Contains(how, "jail is unavailable") {
		t.Errorf("engine auto without bwrap: renderer %v, %q, %v", r, how, err)
	}
	if c := a.jailCheck(); c.OK || !c.Warn || c.Fatal {
		t.Errorf("doctor, auto: %+v", c)
	}
}
