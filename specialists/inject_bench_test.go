package specialists

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// evalFace fetches a face of the evaluation platform with a canary in every
// field: a realistic page for the analysis benchmarks.
func evalFace(b *testing.B) (page, token string) {
	b.Helper()
	w := newEvalWorld(b)
	token = "qa1b2c3d4e5f"
	w.store.Register("bench")
	for _, f := range []string{"display", "headline", "tagline", "nickname", "motto", "pronouns", "mood", "color", "accent", "website",
		"homepage", "caption", "signature", "closing", "greeting", "farewell", "theme", "palette"} {
		w.store.Set("bench", evalKey(f), []byte(token))
	}
	resp, err := http.Get(w.target.FaceURL("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), token
}

// BenchmarkPageAnalysis is one page's tokenization plus the landing and
// breakout searches, uncached (a fresh page each iteration).
func BenchmarkPageAnalysis(b *testing.B) {
	page, token := evalFace(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(page)))
	i := 0
	for b.Loop() {
		p := page + "<!--" + strconv.Itoa(i) + "-->"
		i++
		if len(landingsOf(p, token)) == 0 || len(breakoutsOf(p, token)) != 0 {
			b.Fatal("want landings and no breakouts for a plain canary")
		}
	}
}

// BenchmarkLiveInjection judges one stored value on a page, uncached.
func BenchmarkLiveInjection(b *testing.B) {
	page, _ := evalFace(b)
	value := `Mo" onmouseover="alert(document.cookie)`
	page += `<img alt="` + value + `">`
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := page + "<!--" + strconv.Itoa(i) + "-->"
		i++
		if len(liveOf(p, value)) == 0 {
			b.Fatal("no live hit")
		}
	}
}

// BenchmarkSecurityReplay is the last turn of a full security run against
// the evaluation platform (about 260 recorded calls): a playbook replays
// its whole history on every turn, so this is the planner's worst per-turn
// cost in such a run.
func BenchmarkSecurityReplay(b *testing.B) {
	w := newEvalWorld(b)
	var findings []map[string]any
	reg := w.tools("r-bench", &findings)
	m := mustNewB(b, "security")
	ctl := fleetDial(fleet.Exercise)
	st := fleet.State{RunID: "r-bench", Target: w.target, Tools: reg.List()}
	ctx := context.Background()
	for range 400 {
		step, err := m.Next(ctx, &st)
		if err != nil {
			b.Fatal(err)
		}
		if step.Done {
			break
		}
		out, err := reg.Dispatch(ctx, ctl, step.Call.Tool, step.Call.Args)
		if err != nil {
			b.Fatal(err)
		}
		st.History = append(st.History, fleet.Exchange{Call: *step.Call, Verdict: out.Verdict, Result: out.Result})
	}
	b.ReportMetric(float64(len(st.History)), "calls")
	b.ReportAllocs()
	for b.Loop() {
		if step, err := m.Next(ctx, &st); err != nil || !step.Done {
			b.Fatalf("not done: %v %v", step, err)
		}
	}
}

func mustNewB(b *testing.B, name string) fleet.Model {
	m, err := New(name, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

type fleetDial fleet.Dial

func (d fleetDial) Dial() (fleet.Dial, error) { return fleet.Dial(d), nil }
