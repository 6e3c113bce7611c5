package specialists

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

// notebook is a platform whose one form POSTs a note: the answer (201)
// names it in a Location header, and a DELETE of that URL removes it.
type notebook struct {
	mu    sync.Mutex
	next  int
	notes map[string]string
}

func (nb *notebook) handler() http.Handler {
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<!doctype html><html><head><title>Notebook</title></head><body>%s</body></html>", body)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page(w, 200, `<h1>Notebook</h1><p><a href="/help/">Help</a></p><form action="/notes" method="post"><input name="text"><button>Save</button></form>`)
	})
	mux.HandleFunc("GET /help/{$}", func(w http.ResponseWriter, r *http.Request) {
		page(w, 200, `<h1>Help</h1><p>Write a note on <a href="/">the front page</a>.</p>`)
	})
	// An agent to talk to: the active rules run once a call went through.
	mux.HandleFunc("GET /s/{name}", func(w http.ResponseWriter, r *http.Request) {
		page(w, 200, "<h1>"+html.EscapeString(r.PathValue("name"))+"</h1>")
	})
	mux.HandleFunc("POST /rpc/agent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"reply":"noted"}`)
	})
	mux.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		nb.mu.Lock()
		nb.next++
		id := fmt.Sprint(nb.next)
		nb.notes[id] = r.FormValue("text")
		nb.mu.Unlock()
		w.Header().Set("Location", "/notes/"+id)
		page(w, http.StatusCreated, "<p>Saved note "+id+": "+html.EscapeString(r.FormValue("text"))+"</p>")
	})
	mux.HandleFunc("DELETE /notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		nb.mu.Lock()
		defer nb.mu.Unlock()
		if _, ok := nb.notes[r.PathValue("id")]; !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		delete(nb.notes, r.PathValue("id"))
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// cutShortRun runs security at exercise against a fresh notebook (no
// browser) through the agent loop, with at most maxTurns turns and mut
// applied to its config, and returns how it ended, the qa_submit
// requests it sent, the run record and the notes left on the notebook.
func cutShortRun(t *testing.T, maxTurns int, mut func(*fleet.LoopConfig)) (fleet.RunResult, []string, *trajectory.Run, int) {
	t.Helper()
	nb := &notebook{notes: map[string]string{}}
	srv := httptest.NewServer(nb.handler())
	defer srv.Close()
	tg := fleet.Target{Docs: []string{srv.URL + "/help/"}, Faces: srv.URL + "/s/{name}", Call: srv.URL + "/rpc/agent", Names: []string{"ada"},
		FetchAllow: []string{strings.TrimPrefix(srv.URL, "http://")}}
	client := &http.Client{Timeout: 10 * time.Second}
	var count writeCount
	var findings []map[string]any
	w, err := trajectory.Create(filepath.Join(t.TempDir(), "runs"), "r-cut", trajectory.Header{RunID: "r-cut", Specialist: "security"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fleet.LoopConfig{
		RunID: "r-cut", Specialist: "security", Target: tg, Model: mustNew(t, "security", Options{}),
		Tools: httpToolsCounted(tg, client, client, evalWrites, &count)("r-cut", &findings), Dial: fleettest.Dial(fleet.Exercise),
		Meter: &fleettest.Meter{Budget: fleet.Budget{MaxTurns: maxTurns}}, Record: w,
	}
	if mut != nil {
		mut(&cfg)
	}
	res, err := fleet.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	run, err := trajectory.ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	return res, count.urls, run, len(nb.notes)
}

// TestSecurityUndoesItsPostsHoweverTheRunEnds: the security playbook
// deletes what its POSTs created at the end of its program; a run cut
// short before that (its turns spent, the kill switch) still ends with
// the delete, as the loop's end-of-run calls (fleet.Ender): with turns
// spent the notes its POSTs created on a notebook platform are deleted and none is
// left; with the kill switch on the DELETEs are refused without being
// sent, and each note is listed as left on the platform in the footer.
// Before, both runs left the notes on the platform, unlisted.
func TestSecurityUndoesItsPostsHoweverTheRunEnds(t *testing.T) {
	// A whole run first: where its first POST that created a note is.
	full, urls, run, notes := cutShortRun(t, 400, nil)
	if full.Outcome != trajectory.OutcomeDone || notes != 0 {
		t.Fatalf("the whole run: %s, %d notes left: %s", full.Outcome, notes, full.Summary)
	}
	firstPost := -1
	for _, tu := range run.Turns() {
		if tu.ProposedAction != nil && tu.ProposedAction.Tool == "qa_submit" && strings.Contains(string(tu.ProposedAction.Args), `"POST"`) &&
			strings.Contains(resultText(tu), `"created":`) {
			firstPost = tu.Index
			break
		}
	}
	if firstPost < 0 {
		t.Fatalf("the whole run created nothing with a POST: %v\n%s", urls, full.Summary)
	}
	cut := firstPost + 3 // a few turns after it, long before the program's own undo

	t.Run("turns spent", func(t *testing.T) {
		res, urls, run, notes := cutShortRun(t, cut, nil)
		if res.Outcome != trajectory.OutcomeBudgetExhausted {
			t.Fatalf("outcome %s, want budget_exhausted: %s", res.Outcome, res.Summary)
		}
		if notes != 0 || !strings.Contains(strings.Join(urls, " "), "DELETE ") {
			t.Errorf("%d notes left after a run cut short; its writes %v", notes, urls)
		}
		if !strings.Contains(run.Footer.FinalSummary, "; at the run's end: security playbook's undo: ") || strings.Contains(run.Footer.FinalSummary, "which a POST of this run created") {
			t.Errorf("the footer does not say the end ran, or lists a note it deleted: %s", run.Footer.FinalSummary)
		}
	})
	t.Run("kill switch", func(t *testing.T) {
		turns := 0
		res, urls, run, notes := cutShortRun(t, 400, func(c *fleet.LoopConfig) {
			c.Narrate = func(fleet.TurnEvent) { turns++ }
			c.Paused = func() (bool, error) { return turns >= cut, nil }
		})
		if res.Outcome != trajectory.OutcomeCancelled || notes == 0 || strings.Contains(strings.Join(urls, " "), "DELETE ") {
			t.Fatalf("outcome %s, %d notes, writes %v: want cancelled, the notes still there, no DELETE sent", res.Outcome, notes, urls)
		}
		f := run.Footer.FinalSummary
		if got := strings.Count(f, "which a POST of this run created ("); got != notes || !strings.Contains(f, "(DELETE: refused: the kill switch is on") {
			t.Errorf("%d notes listed as left, %d on the platform, want each with the first refusal: %s", got, notes, f)
		}
	})
}

// resultText is a turn's result as recorded.
func resultText(tu trajectory.Turn) string {
	raw, _ := tu.Result.([]byte)
	if raw == nil {
		if r, ok := tu.Result.(interface{ MarshalJSON() ([]byte, error) }); ok {
			raw, _ = r.MarshalJSON()
		}
	}
	return string(raw)
}
