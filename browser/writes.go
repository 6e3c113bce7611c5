package browser

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Write is one write a rendered page tried to make: a request whose method
// is not GET or HEAD (a script's fetch or XMLHttpRequest, a form,
// navigator.sendBeacon), or a WebSocket. Config.Write decides it before
// anything is sent.
type Write struct {
	// Method is the request's HTTP method, or "WEBSOCKET".
	Method string
	URL    string
	// Via names the fence that caught it: "page" (the tab's DevTools
	// Fetch domain) or "proxy" (the allowlist proxy, which reads inside
	// every tunnel: what the tab does not see, service workers', workers'
	// and WebSocket handshakes).
	Via string
}

// Methods that only read: the only ones that leave the browser without
// Config.Write's consent.
func isWrite(method string) bool {
	switch strings.ToUpper(method) {
	case http.MethodGet, http.MethodHead:
		return false
	}
	return true
}

// write asks Config.Write about w; nil Config.Write holds everything.
func (b *Browser) write(w Write) error {
	if b.cfg.Write == nil {
		return errHeld
	}
	return b.cfg.Write(w)
}

type heldError string

func (e heldError) Error() string { return string(e) }

const (
	errHeld = heldError("held: no write policy configured")
)

// grants are the writes the tab's Fetch domain let through, by method and
// URL, so the proxy that sees the same request does not ask (and spend)
// again. Each grant lets one request through, within grantTTL; a request
// the proxy finds no grant for is decided there (a worker's, a service
// worker's).
type grants struct {
	mu sync.Mutex
	m  map[string][]time.Time
}

const grantTTL = time.Minute

func grantKey(method, rawURL string) string { return strings.ToUpper(method) + " " + rawURL }

func (g *grants) add(method, rawURL string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string][]time.Time{}
	}
	k := grantKey(method, rawURL)
	g.m[k] = append(g.m[k], time.Now().Add(grantTTL))
}

// take consumes a live grant for method and rawURL.
func (g *grants) take(method, rawURL string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := grantKey(method, rawURL)
	now := time.Now()
	for len(g.m[k]) > 0 {
		exp := g.m[k][0]
		g.m[k] = g.m[k][1:]
		if now.Before(exp) {
			if len(g.m[k]) == 0 {
				delete(g.m, k)
			}
			return true
		}
	}
	delete(g.m, k)
	return false
}
