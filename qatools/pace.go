package qatools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Request pacing defaults: gentle on a platform that did not ask for more.
const (
	DefaultRequestRate = 10.0 // requests per second per host
	maxBackoff         = 60 * time.Second
	firstBackoff       = time.Second
	// maxPaceWait is the longest a request waits for its turn; a longer wait
	// (a platform asking for a long pause) fails the call instead, so a run
	// never sits silently blocked.
	maxPaceWait = 30 * time.Second
)

// ErrRateLimited is wrapped by Pacer.Wait when the host asked for a pause
// longer than a call may wait.
var ErrRateLimited = errors.New("rate limited by the platform")

// Pacer spaces the requests qa_fetch and qa_call send to each host (a
// token bucket per host, kept as a theoretical arrival time) and backs off a
// host that answers 429 Too Many Requests or 503 with Retry-After: the next
// request to it waits for the Retry-After the platform gave, or an
// exponential pause (1 s, doubling, at most 60 s) when it gave none. Any
// other answer ends the back-off. One Pacer is shared by every run of a
// process, so concurrent runs share a host's rate.
type Pacer struct {
	interval  time.Duration // 1/rate; 0: no pacing (back-off still applies)
	tolerance time.Duration // (burst-1) intervals: how far ahead a burst may run

	mu    sync.Mutex
	hosts map[string]*hostPace
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

type hostPace struct {
	tat     time.Time     // when the bucket would be full again had every request gone at its slot
	until   time.Time     // no request before this (back-off)
	backoff time.Duration // the next back-off when the platform gives no Retry-After
}

// NewPacer returns a pacer allowing rate requests per second per host with
// bursts of burst (at least 1). rate <= 0 disables pacing but not back-off.
func NewPacer(rate float64, burst int) *Pacer {
	p := &Pacer{hosts: map[string]*hostPace{}, now: time.Now, sleep: fleet.Sleep}
	if rate > 0 {
		p.interval = time.Duration(float64(time.Second) / rate)
		p.tolerance = time.Duration(max(0, burst-1)) * p.interval
	}
	return p
}

// Wait blocks until a request to host may be sent and reserves it. It returns
// how long it waited. It fails without waiting when the wait would exceed
// 30 s (an error wrapping ErrRateLimited that says how long the platform
// asked for), and with ctx's error when ctx ends first.
func (p *Pacer) Wait(ctx context.Context, host string) (time.Duration, error) {
	host = strings.ToLower(host)
	p.mu.Lock()
	h := p.host(host)
	now := p.now()
	send := now
	if p.interval > 0 {
		if slot := h.tat.Add(-p.tolerance); slot.After(send) {
			send = slot
		}
	}
	if h.until.After(send) {
		send = h.until
	}
	wait := send.Sub(now)
	if wait > maxPaceWait {
		p.mu.Unlock()
		return 0, fmt.Errorf("%w: %s asked to wait %s, longer than a call may wait (%s)", ErrRateLimited, host, wait.Round(time.Second), maxPaceWait)
	}
	if p.interval > 0 {
		if h.tat.Before(send) {
			h.tat = send
		}
		h.tat = h.tat.Add(p.interval)
	}
	p.mu.Unlock()
	if wait <= 0 {
		return 0, nil
	}
	if err := p.sleep(ctx, wait); err != nil {
		return wait, err
	}
	return wait, nil
}

func (p *Pacer) host(name string) *hostPace {
	h := p.hosts[name]
	if h == nil {
		h = &hostPace{}
		p.hosts[name] = h
	}
	return h
}

// Observe records host's answer: 429, or 503 with Retry-After, starts or
// lengthens a back-off; any other status ends it. It returns the back-off
// set, 0 when none.
func (p *Pacer) Observe(host string, status int, retryAfter string) time.Duration {
	host = strings.ToLower(host)
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.host(host)
	now := p.now()
	ra, hasRA := parseRetryAfter(retryAfter, now)
	if status != http.StatusTooManyRequests && !(status == http.StatusServiceUnavailable && hasRA) {
		h.backoff = 0
		return 0
	}
	d := ra
	if !hasRA {
		if h.backoff == 0 {
			h.backoff = firstBackoff
		}
		d = h.backoff
		h.backoff = min(2*h.backoff, maxBackoff)
	}
	d = min(d, maxBackoff)
	if u := now.Add(d); u.After(h.until) {
		h.until = u
	}
	return d
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// paced runs one HTTP request to rawURL's host under the env's Pacer: it
// waits its turn, measures the request alone (latency_ms is the platform's
// time, not the wait, so perf figures stay true), records a 429 for
// back-off, and adds paced_ms and backoff_ms when they are not zero. A wait
// the platform made too long fails the call with hint rate_limited.
func (t *tools) paced(ctx context.Context, rawURL string, do func() (fleet.Result, error)) (fleet.Result, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return do() // the request itself reports the bad URL
	}
	p := t.env.pacer()
	waited, err := p.Wait(ctx, u.Host)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		res := fleet.Fail("%v", err)
		res["hint"] = "rate_limited"
		return res, nil
	}
	start := time.Now()
	res, err := do()
	if err != nil || res == nil {
		return res, err
	}
	res["latency_ms"] = time.Since(start).Milliseconds()
	if waited > 0 {
		res["paced_ms"] = waited.Milliseconds()
	}
	if st, ok := res["status"].(int); ok {
		ra, _ := res["retry_after"].(string)
		if h, ok := res["headers"].(map[string]any); ok && ra == "" {
			ra, _ = h["retry-after"].(string)
		}
		if d := p.Observe(u.Host, st, ra); d > 0 {
			res["backoff_ms"] = d.Milliseconds()
		}
	}
	return res, nil
}
