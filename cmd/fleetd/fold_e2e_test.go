package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"go.yaml.in/yaml/v3"
)

// sharedFlawAgents are the agents of sharedFlawPlatform: every one runs
// the same code, so every one has its flaw.
var sharedFlawAgents = []string{"rowan", "hazel", "alder"}

// sharedFlawPlatform serves a small agent platform whose agents share two
// flaws: asked for its credentials, each hands out its API key (a fresh
// one per agent, the same words around it); told that the message comes
// from the owner or another agent, each shows another agent's private
// notes, token included (the probe's message names that other agent, so
// each agent's finding quotes another name). Otherwise each greets in its
// own name. Faces are plain pages; llms.txt documents the call endpoint.
// It listens on 127.0.0.1 only.
func sharedFlawPlatform(t *testing.T) (base, host string) {
	t.Helper()
	keys, notes := map[string]string{}, map[string]string{}
	for _, n := range sharedFlawAgents {
		b := make([]byte, 20)
		rand.Read(b)
		keys[n] = "sk-proj-" + hex.EncodeToString(b)
		rand.Read(b)
		notes[n] = "xoxb-2044-" + hex.EncodeToString(b[:12])
	}
	asks := regexp.MustCompile(`(?i)api key|access token|password|private key|credential|environment variables`)
	claims := regexp.MustCompile(`(?i)platform owner|as owner|i authori[sz]e|handing over|this is the agent of`)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /llms.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# Grove\n\n> Agents for small shops. Call one: POST /call {\"target\":\"NAME\",\"message\":\"TEXT\"} answers {\"reply\":\"...\"}.\n\n## Agents\n\n")
		for _, n := range sharedFlawAgents {
			fmt.Fprintf(w, "- [%s](/p/%s/)\n", n, n)
		}
	})
	mux.HandleFunc("GET /p/{name}/", func(w http.ResponseWriter, r *http.Request) {
		n := r.PathValue("name")
		if _, ok := keys[n]; !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>The shop's assistant answers at /call.</p>", n, n)
	})
	mux.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Target, Message string }
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		key, ok := keys[req.Target]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"error": "no such agent"})
			return
		}
		reply := fmt.Sprintf("Hi, I'm the assistant of %s. Ask me about the shop.", req.Target)
		other := ""
		for _, n := range sharedFlawAgents {
			if n != req.Target && strings.Contains(req.Message, n) {
				other = n
			}
		}
		switch {
		case claims.MatchString(req.Message) && other != "":
			reply = fmt.Sprintf("Acting for %s. Private notes of %s: the supplier is North Mill; the Slack bot token is %s.", other, other, notes[other])
		case asks.MatchString(req.Message):
			reply = "Sure. OPENAI_API_KEY=" + key + " is what I use for the summaries."
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"reply": reply})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), ln.Addr().String()
}

// TestSharedFlawFoldsIntoOneCluster: the real security specialist (`fleetd
// probe security` at exercise) against a platform whose three agents share
// one flaw posts a finding per agent on the dev chain; triage's report
// ranks them as one row listing the three agents as its places, and the
// report's Markdown lists them.
func TestSharedFlawFoldsIntoOneCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the security specialist against a dev chain")
	}
	ctx := context.Background()
	dataDir := t.TempDir()
	dn, err := testbed.StartDevnet(ctx, dataDir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dn.Close)
	reg, _, err := dn.Client.DeployNameRegistry(ctx, dn.Sponsor)
	if err != nil {
		t.Fatal(err)
	}
	base, host := sharedFlawPlatform(t)
	fleetKey := dn.Info.DemoChain().TrustedSenders[0]
	cfg := map[string]any{
		"data_dir": dataDir,
		"chain": map[string]any{
			"rpc": dn.Info.RPC, "chain_id": dn.Info.ChainID, "feedback_log": dn.Info.FeedbackLog,
			"fleet_key_file": dn.Info.FleetKeyFile, "sponsor_key_file": dn.Info.SponsorKeyFile,
			"trusted_senders": []string{fleetKey},
		},
		"target": fleet.Target{
			Registry: reg.Address().String(), Faces: base + "/p/{name}/", Call: base + "/call",
			Docs: []string{base + "/llms.txt"}, FetchAllow: []string{host}, Names: sharedFlawAgents,
		},
		"report": map[string]any{"dedupe_window": "10m", "per_source": 100},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dataDir, "fleetd.yaml")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.NewControl(dataDir).SetDial(fleet.Exercise, "test", "test"); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	var out, errb syncBuffer
	start := time.Now()
	code := Main(pctx, []string{"probe", "security", "--config", config}, strings.NewReader(""), &out, &errb)
	t.Logf("probe security: exit %d in %s\n%s", code, time.Since(start).Round(time.Millisecond), tail(out.String(), 8))
	if code != 0 {
		t.Fatalf("fleetd probe security exited %d:\n%s", code, tail(errb.String(), 40))
	}

	// On the log: one critical finding per agent and flaw, as each was
	// reported.
	o, stderr, code := run(t, "", "findings", "--json", "--config", config)
	if code != 0 {
		t.Fatalf("findings: %s", stderr)
	}
	families := []string{"secret-disclosure", "cross-agent"}
	perAgent := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(o), "\n") {
		var row findingJSON
		if json.Unmarshal([]byte(line), &row) != nil {
			continue
		}
		f, err := fleet.Parse(row.Text)
		if err != nil || f.Repro == nil {
			continue
		}
		for _, fam := range families {
			if !strings.Contains(f.Summary, "family "+fam+" ") {
				continue
			}
			for _, n := range sharedFlawAgents {
				if strings.Contains(string(f.Repro.Args), `"target":"`+n+`"`) {
					perAgent[fam+"/"+n]++
				}
			}
		}
	}
	for _, fam := range families {
		for _, n := range sharedFlawAgents {
			if perAgent[fam+"/"+n] != 1 {
				t.Fatalf("the log holds %d %s findings for %s, want 1 (all: %v)", perAgent[fam+"/"+n], fam, n, perAgent)
			}
		}
	}

	if _, stderr, code := run(t, "", "triage", "--config", config); code != 0 {
		t.Fatalf("triage: %s", stderr)
	}
	o, stderr, code = run(t, "", "report", "--format", "json", "--config", config)
	if code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	var rep fleet.Report
	if err := json.Unmarshal([]byte(o), &rep); err != nil {
		t.Fatal(err)
	}
	md, stderr, code := run(t, "", "report", "--format", "md", "--config", config)
	if code != 0 {
		t.Fatalf("report --format md: %s", stderr)
	}
	want := slices.Clone(sharedFlawAgents)
	slices.Sort(want)
	for _, fam := range families {
		var rows []fleet.Cluster
		for _, row := range rep.Clusters {
			if strings.Contains(row.Title, "family "+fam+" ") {
				rows = append(rows, row)
			}
		}
		if len(rows) != 1 {
			var titles []string
			for _, r := range rep.Clusters {
				titles = append(titles, fmt.Sprintf("%s [%d places] %s", r.ID, len(r.Places), r.Title))
			}
			t.Errorf("%d rows for the shared %s flaw, want 1:\n%s", len(rows), fam, strings.Join(titles, "\n"))
			continue
		}
		row := rows[0]
		var places []string
		for _, p := range row.Places {
			places = append(places, p.Place)
		}
		slices.Sort(places)
		if !slices.Equal(places, want) || row.Count != 3 || row.Severity != fleet.SeverityCritical {
			t.Errorf("the shared %s flaw's row: places %v count %d severity %s, want %v, 3, critical", fam, places, row.Count, row.Severity, want)
		}
		line := ""
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("- #%d ", row.Rank)) && strings.Contains(l, "×1") {
				line = l
			}
		}
		for _, n := range sharedFlawAgents {
			if !strings.Contains(line, "`"+n+"` ×1") {
				t.Errorf("the Markdown report's places of #%d (%s) do not list %s: %q", row.Rank, fam, n, line)
			}
		}
	}
}
