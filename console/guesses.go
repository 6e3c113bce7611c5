package console

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Token guessing, per client address: each wrong token (a login, or a
// control's bearer header) spends one of guessBurst tries, which come back
// one per guessRefill. A client with none left is refused with 429 and
// Retry-After before its token is looked at, the right one included, so a
// guesser at a thousand tries a second gets guessBurst tries and then one
// every guessRefill: ~8,640 a day against a 256-bit token. The first refusal
// of a lockout is logged, and how many were refused during it is logged
// when it ends, so a flood is visible without a log line per request.
const (
	guessBurst   = 5
	guessRefill  = 10 * time.Second
	guessClients = 4096 // addresses tracked; idle ones (all tries back) go first
)

// errTooMany is a client out of token tries (429).
var errTooMany = fmt.Errorf("too many wrong tokens from this address")

type guessState struct {
	tries   float64   // tries left
	at      time.Time // when tries was computed
	refused int       // attempts refused since the lockout began
}

// guesses rate-limits wrong tokens per client address.
type guesses struct {
	mu  sync.Mutex
	m   map[string]*guessState
	now func() time.Time
	log *slog.Logger
}

func newGuesses(now func() time.Time, log *slog.Logger) *guesses {
	return &guesses{m: map[string]*guessState{}, now: now, log: log}
}

// refill brings st's tries up to now.
func (g *guesses) refill(st *guessState, now time.Time) {
	st.tries = min(guessBurst, st.tries+now.Sub(st.at).Seconds()/guessRefill.Seconds())
	st.at = now
}

// allow reports whether ip may present a token now; when it may not, it
// returns how long until it may.
func (g *guesses) allow(ip string) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.m[ip]
	if st == nil {
		return true, 0
	}
	now := g.now()
	g.refill(st, now)
	if st.tries >= 1 {
		if st.refused > 0 {
			g.log.Warn("console: token tries allowed again", "remote", ip, "refused_while_limited", st.refused)
			st.refused = 0
		}
		return true, 0
	}
	if st.refused == 0 {
		g.log.Warn("console: too many wrong tokens; refusing this address's tries", "remote", ip, "retry_in", guessRefill)
	}
	st.refused++
	wait := time.Duration((1 - st.tries) * float64(guessRefill))
	return false, max(wait, time.Second)
}

// failed spends one of ip's tries on a wrong token.
func (g *guesses) failed(ip string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	st := g.m[ip]
	if st == nil {
		if len(g.m) >= guessClients {
			g.evict(now)
		}
		st = &guessState{tries: guessBurst, at: now}
		g.m[ip] = st
	}
	g.refill(st, now)
	st.tries = max(st.tries-1, 0)
}

// evict drops the addresses whose tries are all back, or, when none are,
// the one that failed longest ago.
func (g *guesses) evict(now time.Time) {
	var oldest string
	for ip, st := range g.m {
		g.refill(st, now)
		if st.tries >= guessBurst {
			delete(g.m, ip)
			continue
		}
		if oldest == "" || st.at.Before(g.m[oldest].at) {
			oldest = ip
		}
	}
	if len(g.m) >= guessClients && oldest != "" {
		delete(g.m, oldest)
	}
}
