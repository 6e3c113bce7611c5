package specialists

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
)

// alerts are the canary hook calls of stored markup (crawl.CanaryCall).
var alerts = regexp.MustCompile(`on(?:error|toggle)=self\.` + crawl.CanaryHook + `\?\.\('([^']*)'\)`)

// servedPage is u as its server serves it (no fragment), as a browser
// fake's render: the page's markup and its document request.
func servedPage(client *http.Client, u string) (crawl.Rendered, *url.URL, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return crawl.Rendered{}, nil, err
	}
	resp, err := client.Get(pu.Scheme + "://" + pu.Host + pu.EscapedPath())
	if err != nil {
		return crawl.Rendered{}, nil, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return crawl.Rendered{URL: u, FinalURL: u, Status: resp.StatusCode, HTML: string(b), Settled: true,
		Requests: []crawl.Request{{URL: u, Method: "GET", Type: "document", Status: resp.StatusCode}}}, pu, nil
}

// TestStoredDOMOnAName: on a chain platform (the end-to-end platform, whose
// faces the server writes with the face and bio fields unescaped and the
// title escaped), security's fresh name gets the markup canary in each
// metadata field inject.Stored wrote, and its face is rendered. A browser
// (a fake that runs the stored markup the page would run) that also puts
// the title into the page through innerHTML (flawed) must give one stored
// DOM XSS finding, for the title only: the face and bio markup the server
// itself writes is inject.Stored's finding, not a DOM-based one. With the
// title shown as text (the twin) there is no stored DOM XSS finding.
func TestStoredDOMOnAName(t *testing.T) {
	for _, flawed := range []bool{true, false} {
		pl := newPlatform(t)
		r := &fakeRenderer{fn: func(u string) (crawl.Rendered, error) {
			out, pu, err := servedPage(pl.srv.Client(), u)
			if err != nil {
				return out, err
			}
			ran := out.HTML // the markup the server wrote runs
			if name, ok := strings.CutPrefix(pu.Path, "/u/"); ok && flawed {
				pl.mu.Lock()
				ran += pl.meta[name]["title"] // the page's script: title.innerHTML = metadata.title
				pl.mu.Unlock()
			}
			for _, m := range alerts.FindAllStringSubmatch(ran, -1) {
				out.Dialogs = append(out.Dialogs, m[1])
			}
			return out, nil
		}}
		res, got := pl.run("security", fleet.Exercise, Options{Corpus: recipeCorpus, Renderer: r})
		if !strings.Contains(res.Summary, "the face as served holds it") {
			t.Errorf("flawed %v: no note on the server-written markup that ran:\n%s", flawed, res.Summary)
		}
		var stored []map[string]any
		for _, f := range got {
			if strings.Contains(f["summary"].(string), "Stored DOM-based XSS") {
				stored = append(stored, f)
			}
		}
		t.Logf("flawed %v: stored DOM XSS findings:%s", flawed, summaries(stored))
		switch {
		case flawed && (len(stored) != 1 || findReport(stored, `metadata field "title"`, "/u/NAME", "second write", "CWE-79") == nil || stored[0]["severity"] != "high" || stored[0]["surface"] != "dom"):
			t.Errorf("flawed: want one high stored DOM XSS finding on the title, got:%s", summaries(stored))
		case !flawed && len(stored) != 0:
			t.Errorf("twin: stored DOM XSS findings:%s", summaries(stored))
		}
		// The server-written stored XSS is still inject.Stored's.
		if findReport(got, "CWE-79", `field "bio"`, "element text") == nil {
			t.Errorf("the server-written stored XSS in bio is no longer reported:%s", summaries(got))
		}
		var published int
		for u, n := range r.count {
			if strings.Contains(u, "#qa-") {
				published += n
			}
		}
		if published == 0 || published > 2 {
			t.Errorf("flawed %v: %d renders of the fresh face after a write, want 1 or 2", flawed, published)
		}
	}
}

// statusBoard is a platform whose front page's script reads one JSON
// resource (/api/status) and puts its status into the page as HTML; the
// resource is written with PATCH (its OPTIONS answer says so). A PATCH
// whose body holds the canary hook is stored; any other (the restore) is
// answered as mode says: "honour" stores it, "ignore" answers 200 and
// keeps what it holds, "refuse" answers 403.
type statusBoard struct {
	mode   string
	mu     sync.Mutex
	status string
}

func (sb *statusBoard) handler() http.Handler {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>Board</title></head><body>%s</body></html>", body)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<h1>Board</h1><p id=s></p><p><a href="/help/">Help</a></p><script src="/app.js"></script>`)
	})
	mux.HandleFunc("GET /help/{$}", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<h1>Help</h1><p>See <a href="/">the board</a>.</p>`)
	})
	mux.HandleFunc("GET /app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `fetch("/api/status").then(r => r.json()).then(j => { document.getElementById("s").innerHTML = j.status; });`)
	})
	mux.HandleFunc("GET /s/{name}", func(w http.ResponseWriter, r *http.Request) { page(w, "<h1>agent</h1>") })
	mux.HandleFunc("POST /rpc/agent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"reply":"ok"}`)
	})
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"board": 1, "status": sb.status})
	})
	mux.HandleFunc("OPTIONS /api/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, PATCH, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PATCH /api/status", func(w http.ResponseWriter, r *http.Request) {
		var v struct{ Status string }
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &v)
		canary := strings.Contains(string(body), crawl.CanaryHook)
		sb.mu.Lock()
		defer sb.mu.Unlock()
		switch {
		case !canary && sb.mode == "refuse":
			w.WriteHeader(http.StatusForbidden)
			return
		case canary || sb.mode == "honour":
			sb.status = v.Status
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	return mux
}

// TestStoredDOMRereadsItsRestore: the stored DOM XSS check writes the
// status it put a canary in back and reads it again: on a platform that
// honours the restore nothing is left; on one that answers it 200 and
// keeps the canary, or refuses it, the field is listed as left on the
// platform with why. Before, a restore answered 200 was taken at its
// word: the canary stayed on the platform, unlisted.
func TestStoredDOMRereadsItsRestore(t *testing.T) {
	for _, tc := range []struct{ mode, why string }{{"honour", ""}, {"ignore", "reading it back shows other values"}, {"refuse", "PATCH: HTTP 403"}} {
		t.Run(tc.mode, func(t *testing.T) {
			sb := &statusBoard{mode: tc.mode, status: "all quiet"}
			srv := httptest.NewServer(sb.handler())
			defer srv.Close()
			tg := fleet.Target{Docs: []string{srv.URL + "/help/"}, Faces: srv.URL + "/s/{name}", Call: srv.URL + "/rpc/agent", Names: []string{"ada"},
				FetchAllow: []string{strings.TrimPrefix(srv.URL, "http://")}}
			// The browser: the page as served, its script's read of the
			// status, and the canary hook of any markup the status holds.
			r := &fakeRenderer{fn: func(u string) (crawl.Rendered, error) {
				out, pu, err := servedPage(srv.Client(), u)
				if err != nil {
					return out, err
				}
				if pu.Path == "/" {
					out.Requests = append(out.Requests, crawl.Request{URL: srv.URL + "/api/status", Method: "GET", Type: "fetch", Status: 200})
					sb.mu.Lock()
					for _, m := range alerts.FindAllStringSubmatch(sb.status, -1) {
						out.Dialogs = append(out.Dialogs, m[1])
					}
					sb.mu.Unlock()
				}
				return out, nil
			}}
			client := &http.Client{Timeout: 10 * time.Second}
			res, got := runLoop(t, "security", fleet.Exercise, tg, httpToolsCounted(tg, client, client, evalWrites, nil), Options{Renderer: r})
			if findReport(got, "Stored DOM-based XSS", `field "status"`) == nil {
				t.Fatalf("no stored DOM XSS finding on the status:%s", summaries(got))
			}
			sb.mu.Lock()
			holds := strings.Contains(sb.status, crawl.CanaryHook)
			sb.mu.Unlock()
			left := "the fields status of " + srv.URL + "/api/status (a resource the pages read) hold what the run's PATCH wrote (restoring them: " + tc.why + ")"
			switch {
			case tc.why == "" && (holds || strings.Contains(res.Summary, "/api/status (a resource the pages read)")):
				t.Errorf("an honoured restore: the status holds a canary (%v) or is listed as left:\n%s", holds, res.Summary)
			case tc.why != "" && (!holds || !strings.Contains(res.Summary, left)):
				t.Errorf("the canary stays (%v) and is not listed as left (%q):\n%s", holds, left, res.Summary)
			}
		})
	}
}
