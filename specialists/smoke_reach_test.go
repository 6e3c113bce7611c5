package specialists

// The smoke playbook's control check, with real parts: the embedded
// go-ethereum dev chain on 127.0.0.1 (the node qa_chain reads and the
// feedback log qa_report posts to, through the real poster), the real qa_*
// tools and agent loop, and httptest targets on 127.0.0.1. A target that is
// down is a closed server; a node that is down is a stopped dev chain.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// smokeBed is a dev chain with fleetd's feedback log and the qa_* tools'
// environment pointed at it.
type smokeBed struct {
	t      *testing.T
	dir    string
	node   *devchain.Chain
	client *chain.Client
	log    *chain.FeedbackLog
	env    *qatools.Env
}

func newSmokeBed(t *testing.T) *smokeBed {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a dev chain")
	}
	ctx := context.Background()
	sponsor, _ := chain.GenerateKey()
	fleetKey, _ := chain.GenerateKey()
	wei, _ := new(big.Int).SetString("1000000000000000000000", 10)
	node, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{{Address: sponsor.Address(), Wei: wei}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	client, err := chain.Dial(ctx, node.URL(), chain.Options{ReceiptTimeout: 20 * time.Second, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	log, _, err := client.DeployFeedbackLog(ctx, sponsor)
	if err != nil {
		t.Fatal(err)
	}
	b := &smokeBed{t: t, dir: t.TempDir(), node: node, client: client, log: log}
	rep, err := poster.New(poster.Config{Log: log, Identity: fleetKey, Sponsor: sponsor, OutboxDir: filepath.Join(b.dir, "outbox")})
	if err != nil {
		t.Fatal(err)
	}
	b.env = &qatools.Env{
		Chain: client, Log: log, FleetKey: fleetKey, Sponsor: sponsor, Reporter: rep,
		Limits: qatools.Limits{CallTimeout: 2 * time.Second, RequestRate: -1},
	}
	return b
}

// target returns a target served by srv (faces at /u/{name}), with names.
func (b *smokeBed) target(srv *httptest.Server, names ...string) fleet.Target {
	b.t.Helper()
	u, _ := url.Parse(srv.URL)
	return fleet.Target{
		Registry: "0x00000000000000000000000000000000000000aa",
		Faces:    srv.URL + "/u/{name}", Call: srv.URL + "/call",
		FetchAllow: []string{u.Host}, Names: names,
	}
}

// run runs the smoke playbook at observe through the real loop and tools,
// and returns its result and its run record as read back from disk.
func (b *smokeBed) run(tg fleet.Target) (fleet.RunResult, *trajectory.Run) {
	b.t.Helper()
	allow, err := qatools.NewAllowlist(tg.FetchAllow)
	if err != nil {
		b.t.Fatal(err)
	}
	b.env.Target, b.env.Fetcher = tg, qatools.NewFetcher(allow, 2*time.Second, 64<<10)
	b.env.Call = &http.Client{Timeout: 2 * time.Second}
	const runID = "r-smoke-reach"
	sb, err := sandbox.Open(filepath.Join(b.dir, "qa-sandbox"), runID)
	if err != nil {
		b.t.Fatal(err)
	}
	meter := sandbox.NewMeter(fleet.Budget{MaxTurns: 40})
	reg, err := qatools.NewRegistry(b.env, &qatools.Run{ID: runID, Source: "qa-smoke", Sandbox: sb, Meter: meter},
		"qa_create", "qa_compile", "qa_publish", "qa_fetch", "qa_call", "qa_chain", "qa_report")
	if err != nil {
		b.t.Fatal(err)
	}
	w, err := trajectory.Create(b.dir, runID, trajectory.Header{RunID: runID, Specialist: "smoke"})
	if err != nil {
		b.t.Fatal(err)
	}
	res, err := fleet.Run(context.Background(), fleet.LoopConfig{
		RunID: runID, Specialist: "smoke", Target: tg,
		Model: mustNew(b.t, "smoke", Options{RetryDelay: 100 * time.Millisecond}),
		Tools: reg, Dial: fleettest.Dial(fleet.Observe), Meter: meter, Record: w,
	})
	if err != nil {
		b.t.Fatalf("Run: %v", err)
	}
	rec, err := trajectory.ReadAll(trajectory.Path(b.dir, runID))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("%s: %s (%v)", res.Outcome, res.Summary, res.Err)
	return res, rec
}

// posted returns the texts of the feedback log's entries.
func (b *smokeBed) posted() []string {
	b.t.Helper()
	ctx := context.Background()
	n, err := b.log.Count(ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	es, err := b.log.Range(ctx, 0, n)
	if err != nil {
		b.t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Text)
	}
	return out
}

// outboxed counts the entries waiting in the poster's outbox.
func (b *smokeBed) outboxed() int {
	b.t.Helper()
	es, err := os.ReadDir(filepath.Join(b.dir, "outbox"))
	if err != nil {
		b.t.Fatal(err)
	}
	return len(es)
}

// tools lists the tools a run record's turns called, in order.
func toolsCalled(rec *trajectory.Run) []string {
	var out []string
	for _, tn := range rec.Turns() {
		if tn.ProposedAction != nil {
			out = append(out, tn.ProposedAction.Tool)
		}
	}
	return out
}

// servePages is a target whose faces answer.
func servePages(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>face of "+r.URL.Path+"</body></html>")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// downTarget is a target server that has stopped: its port refuses.
func downTarget(t *testing.T) *httptest.Server {
	srv := servePages(t)
	srv.Close()
	return srv
}

func TestSmokeOutageConfirmedByTheNode(t *testing.T) {
	b := newSmokeBed(t)
	res, rec := b.run(b.target(downTarget(t), "alice"))
	if res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("outcome %s (%v), want done", res.Outcome, res.Err)
	}
	got := strings.Join(toolsCalled(rec), " ")
	if want := "qa_create qa_fetch qa_fetch qa_chain qa_report"; got != want {
		t.Errorf("calls %q, want %q (the fetch, its re-try, the control, the finding)", got, want)
	}
	texts := b.posted()
	if len(texts) != 1 {
		t.Fatalf("%d entries on the log, want one outage finding: %q", len(texts), texts)
	}
	for _, w := range []string{"did not answer", "/u/alice", "Re-tried after 100ms", "the control, the chain node", "answered in the same run"} {
		if !strings.Contains(texts[0], w) {
			t.Errorf("the finding does not say %q:\n%s", w, texts[0])
		}
	}
}

func TestSmokeOwnNetworkDownPostsNothing(t *testing.T) {
	b := newSmokeBed(t)
	if err := b.node.Close(); err != nil { // fleetd's network: the node does not answer either
		t.Fatal(err)
	}
	res, rec := b.run(b.target(downTarget(t), "alice"))
	if res.Outcome != trajectory.OutcomeHarnessError || !errors.Is(res.Err, ErrOwnNetwork) {
		t.Fatalf("outcome %s (%v), want harness_error wrapping ErrOwnNetwork", res.Outcome, res.Err)
	}
	if len(res.Findings) != 0 || b.outboxed() != 0 {
		t.Errorf("%d findings reported, %d waiting in the outbox; want none", len(res.Findings), b.outboxed())
	}
	if slices := toolsCalled(rec); strings.Contains(strings.Join(slices, " "), "qa_report") {
		t.Errorf("qa_report called: %v", slices)
	}
	// What `fleetd runs show` prints: the footer's outcome and harness error.
	f := rec.Footer
	if f == nil || f.Outcome != trajectory.OutcomeHarnessError {
		t.Fatalf("footer %+v, want outcome harness_error", f)
	}
	for _, w := range []string{"fleetd's own network", "the control, the chain node (", "did not answer either", hostOf(b.node.URL()), "no outage finding posted", "/u/alice"} {
		if !strings.Contains(f.HarnessError, w) {
			t.Errorf("the run record's harness error does not say %q: %s", w, f.HarnessError)
		}
	}
}

func TestSmokeTargetUpIsUnchanged(t *testing.T) {
	b := newSmokeBed(t)
	res, rec := b.run(b.target(servePages(t), "alice"))
	if res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("outcome %s (%v), want done", res.Outcome, res.Err)
	}
	if got := strings.Join(toolsCalled(rec), " "); got != "qa_create qa_fetch" {
		t.Errorf("calls %q, want the refused mint and one fetch: no re-try, no control", got)
	}
	if texts := b.posted(); len(texts) != 0 {
		t.Errorf("findings on a target that answers: %q", texts)
	}
}

// reportSummaries are the summaries of the run record's qa_report calls.
func reportSummaries(t *testing.T, rec *trajectory.Run) []string {
	t.Helper()
	var out []string
	for _, tn := range rec.Turns() {
		if a := tn.ProposedAction; a != nil && a.Tool == "qa_report" {
			var args struct{ Summary string }
			if err := json.Unmarshal(a.Args, &args); err != nil {
				t.Fatal(err)
			}
			out = append(out, args.Summary)
		}
	}
	return out
}

// twoHosts is a target whose faces are on faces and whose docs page is on
// docs, another host.
func (b *smokeBed) twoHosts(faces, docs *httptest.Server) fleet.Target {
	tg := b.target(faces, "alice")
	d, _ := url.Parse(docs.URL)
	tg.Docs = []string{docs.URL + "/docs"}
	tg.FetchAllow = append(tg.FetchAllow, d.Host)
	return tg
}

func TestSmokeNodeDownButAnotherHostAnswers(t *testing.T) {
	b := newSmokeBed(t)
	if err := b.node.Close(); err != nil {
		t.Fatal(err)
	}
	docs := servePages(t)
	res, rec := b.run(b.twoHosts(downTarget(t), docs))
	if res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("outcome %s (%v), want done", res.Outcome, res.Err)
	}
	got := reportSummaries(t, rec)
	if len(got) != 1 {
		t.Fatalf("%d findings, want the face's outage: %q", len(got), got)
	}
	for _, w := range []string{"/u/alice", "the chain node did not answer, but the control, " + docs.URL + "/docs on another host of the target, answered"} {
		if !strings.Contains(got[0], w) {
			t.Errorf("the finding does not say %q:\n%s", w, got[0])
		}
	}
	// The node is down: the finding waits in the outbox, posted when it is back.
	if n := b.outboxed(); n != 1 {
		t.Errorf("%d entries in the outbox, want 1", n)
	}
}

func TestSmokeEveryControlDownPostsNothing(t *testing.T) {
	b := newSmokeBed(t)
	if err := b.node.Close(); err != nil {
		t.Fatal(err)
	}
	res, rec := b.run(b.twoHosts(downTarget(t), downTarget(t)))
	if res.Outcome != trajectory.OutcomeHarnessError || !errors.Is(res.Err, ErrOwnNetwork) {
		t.Fatalf("outcome %s (%v), want harness_error wrapping ErrOwnNetwork", res.Outcome, res.Err)
	}
	if got := reportSummaries(t, rec); len(got) != 0 || b.outboxed() != 0 {
		t.Errorf("findings %q, %d in the outbox; want none", got, b.outboxed())
	}
	if f := rec.Footer; f == nil || !strings.Contains(f.HarnessError, "the chain node (") || !strings.Contains(f.HarnessError, "/docs on another host of the target (") {
		t.Errorf("the run record does not name both controls: %+v", f)
	}
}

// TestSmokeBlipIsNoFinding: a target that drops the first connection and
// answers the re-try is not an outage, and no control is needed.
func TestSmokeBlipIsNoFinding(t *testing.T) {
	b := newSmokeBed(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // no answer at all
			}
			return
		}
		io.WriteString(w, "<html>face</html>")
	}))
	t.Cleanup(srv.Close)
	res, rec := b.run(b.target(srv, "alice"))
	if res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("outcome %s (%v), want done", res.Outcome, res.Err)
	}
	if got := strings.Join(toolsCalled(rec), " "); got != "qa_create qa_fetch qa_fetch" {
		t.Errorf("calls %q, want the fetch and its re-try only", got)
	}
	if !strings.Contains(res.Summary, "answered when re-tried after 100ms") {
		t.Errorf("the summary does not note the blip: %s", res.Summary)
	}
	if texts := b.posted(); len(texts) != 0 {
		t.Errorf("findings for a blip: %q", texts)
	}
}
