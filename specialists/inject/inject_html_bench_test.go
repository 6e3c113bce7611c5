package inject

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/qafleet/fleetd/fixtures/injection"
)

// evalFace fetches a face of the evaluation platform with a canary in every
// field: a realistic page for the analysis benchmarks.
func evalFace(b *testing.B) (page, token string) {
	b.Helper()
	store := injection.NewMemStore()
	if err := injection.SeedMem(store); err != nil {
		b.Fatal(err)
	}
	pl, err := injection.Serve(context.Background(), injection.Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pl.Close() })
	token = "qa1b2c3d4e5f"
	store.Register("bench")
	for _, f := range []string{"display", "headline", "tagline", "nickname", "motto", "pronouns", "mood", "color", "accent", "website",
		"homepage", "caption", "signature", "closing", "greeting", "farewell", "theme", "palette"} {
		store.Set("bench", injection.Key(f), []byte(token))
	}
	resp, err := http.Get(injection.Target(pl.URL(), pl.Host(), "0x00000000000000000000000000000000000000bb").FaceURL("bench"))
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
