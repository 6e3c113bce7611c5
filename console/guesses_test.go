package console

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTokenGuessingGetsNowhere: a client guessing the token at the login
// and through a control's bearer header, a thousand tries in a row, gets
// guessBurst looks at the token and 429s after that (the right token
// included, so the limit is no oracle), then one try per guessRefill. It is
// logged: each wrong token, once when the lockout begins, and how many
// tries were refused when it ends. Another address is not affected.
func TestTokenGuessingGetsNowhere(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var logs bytes.Buffer
	var logMu sync.Mutex
	f.c.log = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	f.c.guesses = newGuesses(clock, f.c.log)

	from := func(ip, method, target, body string, hdr map[string]string) int {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Host = "127.0.0.1:8787"
		r.RemoteAddr = ip + ":40000"
		if body != "" {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		f.c.ServeHTTP(w, r)
		if w.Code == 429 && w.Header().Get("Retry-After") == "" {
			t.Errorf("%s %s: 429 without Retry-After", method, target)
		}
		return w.Code
	}
	const guesser, other = "10.0.0.9", "10.0.0.10"
	codes := map[int]int{}
	start := time.Now()
	for i := range 1000 {
		if i%2 == 0 {
			codes[from(guesser, "POST", "/login", url.Values{"token": {"guess" + string(rune('a'+i%26))}}.Encode(), nil)]++
		} else {
			codes[from(guesser, "POST", "/api/pause", "", map[string]string{"Authorization": "Bearer guess"})]++
		}
	}
	took := time.Since(start)
	if codes[401] != guessBurst || codes[429] != 1000-guessBurst {
		t.Errorf("1000 guesses: %v; want %d looked at (401) and the rest refused (429)", codes, guessBurst)
	}
	if code := from(guesser, "POST", "/login", url.Values{"token": {testToken}}.Encode(), nil); code != 429 {
		t.Errorf("the right token from the locked-out address: %d, want 429", code)
	}
	if code := from(other, "POST", "/login", url.Values{"token": {testToken}}.Encode(), nil); code != 303 {
		t.Errorf("the right token from another address: %d, want 303 (logged in)", code)
	}
	if paused, _ := f.control.Paused(); paused {
		t.Error("a guess paused the fleet")
	}
	mu.Lock()
	now = now.Add(guessRefill)
	mu.Unlock()
	if code := from(guesser, "POST", "/login", "token=again", nil); code != 401 {
		t.Errorf("after %s: %d, want one more try (401)", guessRefill, code)
	}
	if code := from(guesser, "POST", "/login", "token=again", nil); code != 429 {
		t.Errorf("the try after that: %d, want 429", code)
	}
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if n := strings.Count(out, "refused: wrong"); n != guessBurst+1 {
		t.Errorf("%d wrong tokens logged, want %d:\n%s", n, guessBurst+1, out)
	}
	if strings.Count(out, "too many wrong tokens") != 2 || !strings.Contains(out, "refused_while_limited=996") {
		t.Errorf("the lockouts are not logged as they should be:\n%s", out)
	}
	t.Logf("1000 guesses in %s: %v", took.Round(time.Millisecond), codes)
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
