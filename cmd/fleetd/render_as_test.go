package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	headless "github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/specialists/replay"
)

// TestRunRendererRendersAsSignedIn: the run's browser, wired as a probe
// wires it (runner.Crawl.Renderer, the run's qatools.Sessions shared with its tools),
// renders Keyring's account page as the identity the run's qa_login signed
// in, at exercise; once the dial is back at observe it renders as nobody
// and no request with the session reaches the platform; the renderer
// built without sessions renders as nobody at all.
func TestRunRendererRendersAsSignedIn(t *testing.T) {
	exe := findChromium(t)
	kr := siwe.Serve(twin.Correct)
	defer kr.Close()
	ctl := fleet.NewControl(t.TempDir())
	if _, err := ctl.SetDial(fleet.Exercise, "test", "test"); err != nil {
		t.Fatal(err)
	}
	tg := kr.Target()
	allow, err := qatools.NewAllowlist(tg.FetchAllow)
	if err != nil {
		t.Fatal(err)
	}
	sponsor, _ := chain.GenerateKey()
	qenv := &qatools.Env{Target: tg, Sponsor: sponsor, Fetcher: qatools.NewFetcher(allow, 5*time.Second, 64<<10), Limits: qatools.Limits{RequestRate: -1}}
	sb, err := sandbox.Open(filepath.Join(t.TempDir(), "qa-sandbox"), "r-as")
	if err != nil {
		t.Fatal(err)
	}
	meter := sandbox.NewMeter(fleet.Budget{MaxWrites: 8})
	sessions := qatools.NewSessions(ctl)
	reg, err := qatools.NewRegistry(qenv, &qatools.Run{ID: "r-as", Source: "qa-test", Sandbox: sb, Meter: meter, Sessions: sessions}, "qa_login")
	if err != nil {
		t.Fatal(err)
	}
	out, err := reg.Dispatch(context.Background(), ctl, "qa_login", []byte(`{"identity":"a","nonce_url":"`+kr.URL()+`/api/auth/nonce","verify_url":"`+kr.URL()+`/api/auth/verify","chain_id":1337}`))
	if err != nil || out.Verdict != fleet.VerdictOK {
		t.Fatalf("qa_login: %v %v", err, out.Result)
	}
	a := &app{cfg: &Config{Crawl: CrawlConfig{Engine: "browser", Chromium: exe}}}
	env := &fleetEnv{Env: qenv}
	r, stop, _, err := a.crawl().Renderer(env, qatools.NewPageWrites(ctl, meter), "", sessions)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	sr, ok := r.(replay.SessionRenderer)
	if !ok {
		t.Fatalf("the run's renderer %T cannot render as an identity", r)
	}
	page, err := sr.RenderAs(context.Background(), kr.URL()+"/account", "a")
	if err != nil || page.Status != 200 || !strings.Contains(page.HTML, "Signed in as") {
		t.Fatalf("rendering /account as a: %v, status %d", err, page.Status)
	}
	before := kr.Seen()
	if _, err := ctl.SetDial(fleet.Observe, "test", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := sr.RenderAs(context.Background(), kr.URL()+"/account", "a"); err == nil || !strings.Contains(err.Error(), "dial is observe") {
		t.Errorf("at observe: %v, want refused", err)
	}
	if after := kr.Seen(); after.WithSession != before.WithSession || after.Requests != before.Requests {
		t.Errorf("at observe %d requests (%d with a session) reached the platform", after.Requests-before.Requests, after.WithSession-before.WithSession)
	}
	plain, stopPlain, _, err := a.crawl().Renderer(env, observeWrites(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stopPlain()
	if _, err := plain.(replay.SessionRenderer).RenderAs(context.Background(), kr.URL()+"/account", "a"); !errors.Is(err, headless.ErrNoSession) {
		t.Errorf("a renderer without sessions: %v, want ErrNoSession", err)
	}
}
