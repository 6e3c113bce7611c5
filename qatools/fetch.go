package qatools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// ErrNotAllowed is wrapped by every fetch the allowlist refuses.
var ErrNotAllowed = errors.New("not on the fetch allowlist")

// Allowlist decides which host:port a fetch may reach (target.fetch_allow).
//
// A URL is allowed when its host:port matches a pattern: an exact host[:port]
// (port defaults to the scheme's), or *.suffix matching any subdomain. The
// address actually dialled is checked too, after DNS: loopback, private,
// link-local (169.254.169.254 and other metadata endpoints included),
// unspecified, multicast and CGNAT addresses are refused unless the URL
// matched an exact (non-wildcard) pattern, so a wildcard entry or a DNS
// answer can never steer a fetch into the host's own network. Redirects are
// checked hop by hop with the same rules.
type Allowlist struct {
	exact map[string]bool // host:port, lowercased
	wild  []string        // ".suffix:port"
}

// NewAllowlist builds an allowlist from host[:port] patterns.
func NewAllowlist(patterns []string) (*Allowlist, error) {
	a := &Allowlist{exact: map[string]bool{}}
	for _, p := range patterns {
		if err := fleet.CheckHostPattern(p); err != nil {
			return nil, err
		}
		p = strings.ToLower(p)
		host, port, err := net.SplitHostPort(p)
		if err != nil {
			host, port = p, ""
		}
		host = strings.Trim(host, "[]")
		ports := []string{port}
		if port == "" {
			ports = []string{"80", "443"}
		}
		for _, pt := range ports {
			if suffix, ok := strings.CutPrefix(host, "*."); ok {
				a.wild = append(a.wild, "."+suffix+":"+pt)
			} else {
				a.exact[net.JoinHostPort(host, pt)] = true
			}
		}
	}
	return a, nil
}

// match returns whether u may be fetched and whether the match was exact.
func (a *Allowlist) match(u *url.URL) (allowed, exact bool, err error) {
	if u == nil {
		return false, false, fmt.Errorf("%w: no URL", ErrNotAllowed)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return false, false, fmt.Errorf("%w: scheme %q (only http and https)", ErrNotAllowed, u.Scheme)
	}
	if u.User != nil {
		return false, false, fmt.Errorf("%w: URLs with credentials are refused", ErrNotAllowed)
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	hp := net.JoinHostPort(host, port)
	if a.exact[hp] {
		return true, true, nil
	}
	for _, w := range a.wild {
		if strings.HasSuffix("."+host+":"+port, w) && strings.Count(host, ".") >= strings.Count(w, ".") {
			return true, false, nil
		}
	}
	return false, false, fmt.Errorf("%w: %s", ErrNotAllowed, hp)
}

// special reports addresses a wildcard or DNS answer must never reach.
func special(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(ip) || // CGNAT
		netip.MustParsePrefix("192.0.0.0/24").Contains(ip) || // IETF protocol assignments
		netip.MustParsePrefix("fd00:ec2::/32").Contains(ip) // AWS IPv6 metadata
}

// Fetcher performs qa_fetch GETs under an Allowlist.
type Fetcher struct {
	allow    *Allowlist
	client   *http.Client
	noFollow *http.Client // the same transport; returns a redirect instead of following it
	maxBody  int
	// lookup resolves a host name; tests replace it to simulate hostile DNS.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// NewFetcher returns a fetcher with the given per-request timeout and body cap.
func NewFetcher(allow *Allowlist, timeout time.Duration, maxBody int) *Fetcher {
	f := &Fetcher{allow: allow, maxBody: maxBody}
	f.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	dialer := &net.Dialer{Timeout: timeout}
	tr := &http.Transport{
		Proxy: nil, // never through an environment proxy
		// The last word on where a fetch goes, per connection, never from the
		// request that started a redirect chain (Allowlist.dial).
		DialContext:           allow.dial(dialer, func(ctx context.Context, host string) ([]netip.Addr, error) { return f.lookup(ctx, host) }),
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
	}
	f.client = &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			_, _, err := allow.match(req.URL)
			return err
		},
	}
	f.noFollow = &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f
}

// Limits of the every-header view of a NoFollow fetch.
const (
	maxHeadersAll  = 64
	maxHeaderValue = 512
)

// headersKept are the response headers a fetch result reports: the ones
// security and ux probes reason about.
var headersKept = []string{
	"Content-Type", "Content-Length", "Server", "X-Powered-By", "Location", "Allow",
	"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Strict-Transport-Security",
	"Referrer-Policy", "Access-Control-Allow-Origin", "Access-Control-Allow-Credentials",
	"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Vary", "Set-Cookie", "Cache-Control",
	"Retry-After",
}

// fetchArgs are qa_fetch's arguments. Every method offered is safe (RFC
// 9110 §9.2.1: it asks for nothing to change), so qa_fetch stays at the
// observe rung whatever the arguments.
type fetchArgs struct {
	URL             string `json:"url" desc:"an http(s) URL on target.fetch_allow" maxlen:"2048"`
	Method          string `json:"method,omitempty" enum:"GET,HEAD,OPTIONS" desc:"GET (default), HEAD, or OPTIONS; OPTIONS with an origin is a CORS preflight for a JSON POST"`
	Origin          string `json:"origin,omitempty" desc:"send this Origin header (CORS probes): scheme://host[:port] or null" maxlen:"256"`
	FollowRedirects *bool  `json:"follow_redirects,omitempty" desc:"default true; false returns a redirect itself (status, location and every response header) instead of following it"`
	As              string `json:"as,omitempty" desc:"send the request with the session of this identity (signed in by qa_login; needs dial exercise); redirects are then not followed" maxlen:"32"`
}

func (t *tools) fetch(ctx context.Context, a fetchArgs) (fleet.Result, error) {
	if t.env.Fetcher == nil {
		return fleet.Fail("qa_fetch: target.fetch_allow is not configured"), nil
	}
	sess, err := t.session(ctx, a.As)
	if err != nil {
		return fleet.Fail("qa_fetch: %v", err), nil
	}
	in := Request{URL: a.URL, Method: a.Method, Origin: a.Origin, NoFollow: a.FollowRedirects != nil && !*a.FollowRedirects, session: sess}
	return t.paced(ctx, a.URL, func() (fleet.Result, error) {
		res, err := t.env.Fetcher.Do(ctx, in)
		if err != nil {
			return nil, ctxErr(ctx)
		}
		return res, nil
	})
}

// Request is one qa_fetch request.
type Request struct {
	URL string
	// Method is GET (the default when empty), HEAD or OPTIONS.
	Method string
	// Origin, when set, is sent as the Origin header: an http(s) origin
	// (scheme://host[:port], nothing after it) or "null". An OPTIONS request
	// with an Origin is a CORS preflight for a JSON POST: it also carries
	// Access-Control-Request-Method: POST and Access-Control-Request-Headers:
	// content-type.
	Origin string
	// NoFollow returns a redirect answer itself (its status, Location and
	// every response header) instead of following it: probes for open
	// redirects and header injection need the answer the server gave.
	NoFollow bool
	// Body and ContentType are qa_submit's: a POST, PUT or PATCH needs a
	// ContentType, a safe method takes neither.
	Body        []byte
	ContentType string
	// undo marks qa_submit's DELETE of what its run created: the only
	// DELETE Do sends (set inside this package only).
	undo bool
	// session is a signed-in identity's (the tools' `as`): its cookies and
	// token go with the request and with nothing else.
	session *Session
}

// Get fetches rawURL with GET; see Do.
func (f *Fetcher) Get(ctx context.Context, rawURL string) (fleet.Result, error) {
	return f.Do(ctx, Request{URL: rawURL})
}

// Do sends one request and returns the qa_fetch result fields: a safe one
// (qa_fetch), or a POST, PUT or PATCH with a body (qa_submit). Every
// refusal (a URL off the allowlist, a special address, an unsafe method or
// one without a body, a malformed origin) and every network failure is a failed result naming
// what was wrong; the error is non-nil only when ctx was cancelled.
func (f *Fetcher) Do(ctx context.Context, in Request) (fleet.Result, error) {
	a, res, err := f.exchange(ctx, in)
	if a == nil {
		return res, err
	}
	resp := a.resp
	sum := sha256.Sum256(a.body)
	headers := map[string]any{}
	for _, h := range headersKept {
		if v := resp.Header.Values(h); len(v) > 0 {
			headers[strings.ToLower(h)] = strings.Join(v, ", ")
		}
	}
	if in.NoFollow {
		// Every header, clipped: an injected header has a name no list holds.
		for _, name := range slices.Sorted(maps.Keys(resp.Header)) {
			if len(headers) == maxHeadersAll {
				break
			}
			v, _ := sandbox.Text([]byte(strings.Join(resp.Header[name], ", ")), maxHeaderValue)
			headers[strings.ToLower(name)] = v
		}
	}
	if in.session != nil {
		// The session's own credentials never go into a result.
		delete(headers, "set-cookie")
	}
	text, _ := sandbox.Text(a.body, f.maxBody)
	return fleet.OK(map[string]any{
		"method":       a.method,
		"status":       resp.StatusCode,
		"content_type": resp.Header.Get("Content-Type"),
		"bytes":        len(a.body),
		"sha256":       hex.EncodeToString(sum[:]),
		"body":         text,
		"truncated":    a.truncated,
		"headers":      headers,
		"final_url":    resp.Request.URL.String(),
		"redirected":   resp.Request.URL.String() != a.url.String(),
	}), nil
}

// answer is one exchange's response, its body read (capped) and closed.
type answer struct {
	resp      *http.Response
	body      []byte
	truncated bool
	method    string
	url       *url.URL
}

// exchange sends in and reads the answer; when it returns no answer, the
// result says why (a refusal, a network failure) or the error is ctx's.
func (f *Fetcher) exchange(ctx context.Context, in Request) (*answer, fleet.Result, error) {
	method, err := methodOf(in)
	if err != nil {
		return nil, fleet.Fail("%v", err), nil
	}
	if err := checkOrigin(in.Origin); err != nil {
		return nil, fleet.Fail("%v", err), nil
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return nil, fleet.Fail("bad url %q: %v", in.URL, err), nil
	}
	if _, _, err := f.allow.match(u); err != nil {
		return nil, fleet.Fail("%v", err), nil
	}
	if err := credentialErr(u); err != nil {
		return nil, fleet.Fail("%v", err), nil
	}
	var reqBody io.Reader
	if in.Body != nil {
		reqBody = bytes.NewReader(in.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reqBody)
	if err != nil {
		return nil, fleet.Fail("bad url %q: %v", in.URL, err), nil
	}
	req.Header.Set("User-Agent", "fleetd-qa/1")
	if in.ContentType != "" {
		req.Header.Set("Content-Type", in.ContentType)
	}
	if in.Origin != "" {
		req.Header.Set("Origin", in.Origin)
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			req.Header.Set("Access-Control-Request-Headers", "content-type")
		}
	}
	in.session.attach(req)
	client := f.client
	if in.NoFollow || in.session != nil {
		// A session is never carried across a redirect: the next hop may
		// be another origin of the allowlist.
		client = f.noFollow
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return nil, nil, ctx.Err()
		}
		res := fleet.Fail("fetch %s: %v", u.Redacted(), unwrapURLError(err))
		if !strings.Contains(err.Error(), "not on the fetch allowlist") && !strings.Contains(err.Error(), "loopback, private") {
			res["hint"] = netHint(err)
		}
		return nil, res, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.maxBody)+1))
	if err != nil {
		res := fleet.Fail("fetch %s: reading body: %v", u.Redacted(), err)
		res["hint"] = netHint(err)
		return nil, res, nil
	}
	truncated := len(body) > f.maxBody
	if truncated {
		body = body[:f.maxBody]
	}
	return &answer{resp: resp, body: body, truncated: truncated, method: method, url: u}, nil, nil
}

// checkOrigin accepts "" (no Origin header), "null", or an http(s) origin
// with a host and nothing after it. The header cannot redirect the request,
// but a malformed one would make a CORS probe meaningless.
func checkOrigin(o string) error {
	if o == "" || o == "null" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(o, " \t\r\n") {
		return fmt.Errorf("origin %q: want scheme://host[:port] (http or https) or null", o)
	}
	return nil
}

// netHint names how a request to the target failed on the network, for a
// planner to tell "no answer" from an answer: "timeout" (no answer in time:
// a blackhole, a hung or overloaded target), "unreachable" (refused, reset
// or cut short before or while answering). Either may be the target's
// fault or fleetd's own network: a finding should say which it saw, not
// guess.
func netHint(err error) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "unreachable"
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
