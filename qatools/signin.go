package qatools

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/siwe"
)

// Sessions (issue 33). qa_login signs an identity in with Sign-In with
// Ethereum (EIP-4361): GET a nonce, build the message, sign it with
// personal_sign (chain.Key.SignText), POST {message, signature} to the
// verify URL, and keep what the answer gives (cookies, a bearer token) as
// that identity's session for the rest of the run. qa_fetch, qa_call and
// qa_submit attach it when asked (`as`). The fences:
//
//   - an identity is either fresh (a throwaway key derived from the
//     sponsor and the run, as qa_create's keys are; random without a
//     sponsor) or a role target.auth.accounts gives a test account for;
//     nothing else can be signed in as, and a session exists only because
//     this run's qa_login made it;
//   - signing in creates state on the platform, so qa_login needs the
//     exercise rung and spends a write; a request with `as` needs the
//     exercise rung too (read from the dial its call was dispatched at), so
//     at observe nothing behind a login is reached;
//   - no credential comes from the model: qa_call refuses Cookie and
//     Authorization headers, qa_fetch and qa_submit take no headers, so a
//     real user's cookie can never be replayed;
//   - keys, cookies and tokens never enter a result (results hold the
//     identity, its address and the names of the cookies).

// Session is one signed-in identity's credentials.
type Session struct {
	Identity string
	Address  fleet.Address
	Given    bool   // a test account from target.auth.accounts
	origin   string // scheme://host of the verify URL it signed in at
	cookies  []*http.Cookie
	bearer   string
}

// attach adds s's credentials to req; a nil session adds nothing.
func (s *Session) attach(req *http.Request) {
	if s == nil {
		return
	}
	for _, c := range s.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	if s.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+s.bearer)
	}
}

// describe names what the session holds, never its values.
func (s *Session) describe() string {
	var parts []string
	if len(s.cookies) > 0 {
		names := make([]string, len(s.cookies))
		for i, c := range s.cookies {
			names[i] = c.Name
		}
		parts = append(parts, "cookie "+strings.Join(names, ","))
	}
	if s.bearer != "" {
		parts = append(parts, "bearer token")
	}
	return strings.Join(parts, " + ")
}

func (t *tools) key(identity string) (*chain.Key, bool, error) {
	t.ids.mu.Lock()
	defer t.ids.mu.Unlock()
	if t.ids.keys == nil {
		t.ids.keys, t.ids.live = map[string]*chain.Key{}, map[string]*Session{}
	}
	if k, ok := t.env.Accounts[identity]; ok {
		return k, true, nil
	}
	if k, ok := t.ids.keys[identity]; ok {
		return k, false, nil
	}
	var k *chain.Key
	var err error
	if t.env.Sponsor != nil {
		// Derived as qa_create's keys are, in a namespace of their own:
		// these keys hold no funds and mint nothing.
		k, err = chain.DeriveThrowawayKey(t.env.Sponsor, t.run.ID+"/signin/"+identity, len(t.ids.keys))
	} else {
		k, err = chain.GenerateKey()
	}
	if err != nil {
		return nil, false, err
	}
	t.ids.keys[identity] = k
	return k, false, nil
}

// session returns the live session of identity, refusing at observe.
func (t *tools) session(ctx context.Context, identity string) (*Session, error) {
	if identity == "" {
		return nil, nil
	}
	if d := fleet.DialOf(ctx); !d.Allows(fleet.Exercise) {
		return nil, fmt.Errorf("refused: a request as a signed-in identity needs dial exercise, dial is %s (observe reads only public pages)", d)
	}
	t.ids.mu.Lock()
	defer t.ids.mu.Unlock()
	s, ok := t.ids.live[identity]
	if !ok {
		return nil, fmt.Errorf("no session for identity %q: sign it in with qa_login first", identity)
	}
	return s, nil
}

// Tampers are qa_login's sign-in verification probes: each sends a login
// a correct server refuses.
var tampers = []string{"reuse_nonce", "domain", "uri", "chain_id", "expired", "other_signer"}

type loginArgs struct {
	Identity  string `json:"identity" desc:"who signs in: a fresh throwaway identity named by a word (a, b, ...), or a role target.auth.accounts holds a test account for" maxlen:"32"`
	NonceURL  string `json:"nonce_url,omitempty" desc:"the URL answering a nonce (GET); default target.auth.nonce" maxlen:"2048"`
	VerifyURL string `json:"verify_url,omitempty" desc:"the URL taking {message, signature} (POST JSON); default target.auth.verify" maxlen:"2048"`
	ChainID   uint64 `json:"chain_id,omitempty" desc:"the message's Chain ID; default target.auth.chain_id or 1"`
	Tamper    string `json:"tamper,omitempty" enum:"reuse_nonce,domain,uri,chain_id,expired,other_signer" desc:"send a login a correct server refuses instead (the nonce replayed, a foreign domain or URI, another chain id, an expired message, a signature by another key); the result says whether it was accepted; no session is kept"`
}

// foreignHost names no real host (RFC 6761): a domain or URI the target
// cannot be.
const foreignHost = "qa-foreign.invalid"

// login: qa_login.
func (t *tools) login(ctx context.Context, a loginArgs) (fleet.Result, error) {
	if err := fleet.CheckIdentityName(a.Identity); err != nil {
		return fleet.Fail("qa_login: %v", err), nil
	}
	if t.env.Fetcher == nil {
		return fleet.Fail("qa_login: target.fetch_allow is not configured"), nil
	}
	auth := t.env.Target.Auth
	if auth == nil {
		auth = &fleet.Auth{}
	}
	nonceURL, verifyURL := orDefault(a.NonceURL, auth.Nonce), orDefault(a.VerifyURL, auth.Verify)
	if nonceURL == "" || verifyURL == "" {
		return fleet.Fail("qa_login: no nonce_url and verify_url (from the docs, or target.auth)"), nil
	}
	vu, err := url.Parse(verifyURL)
	if err != nil || vu.Host == "" {
		return fleet.Fail("qa_login: verify_url %q is not an absolute URL", verifyURL), nil
	}
	for _, u := range []string{nonceURL, verifyURL} {
		if err := t.env.Fetcher.check(Request{URL: u}); err != nil {
			return fleet.Fail("qa_login: %v", err), nil
		}
	}
	chainID := a.ChainID
	if chainID == 0 {
		chainID = max(auth.ChainID, 1)
	}
	key, given, err := t.key(a.Identity)
	if err != nil {
		return nil, fmt.Errorf("qa_login: %w", err)
	}
	if err := t.spendWrite(); err != nil {
		return nil, err
	}
	res := map[string]any{"identity": a.Identity, "address": key.Address().String(), "given": given, "nonce_url": nonceURL, "verify_url": verifyURL}
	if left, limited := t.run.Meter.Remaining(fleet.ResWrites); limited {
		res["writes_left"] = left
	}
	// The nonce, with whatever cookie the server binds it to. An identity
	// signing in again carries its session's cookies, as a browser would:
	// the answer must rotate them (rotated in the result).
	var prev *Session
	if a.Tamper == "" {
		t.ids.mu.Lock()
		prev = t.ids.live[a.Identity]
		t.ids.mu.Unlock()
	}
	jar := &Session{Identity: a.Identity, Address: key.Address()}
	nonce, cookies, fail := t.nonce(ctx, nonceURL)
	if fail != nil {
		return fail, ctxErr(ctx)
	}
	if prev != nil {
		for _, c := range prev.cookies {
			if !slices.ContainsFunc(cookies, func(n *http.Cookie) bool { return n.Name == c.Name }) {
				jar.cookies = append(jar.cookies, c)
			}
		}
	}
	jar.cookies = append(jar.cookies, cookies...)
	now := time.Now().UTC().Truncate(time.Second)
	m := siwe.Message{
		Domain: vu.Host, Address: chain.ChecksumAddress(key.Address()),
		Statement: "fleetd QA: sign-in of a test identity", URI: vu.Scheme + "://" + vu.Host,
		Version: "1", ChainID: chainID, Nonce: nonce, IssuedAt: now, ExpirationTime: now.Add(15 * time.Minute),
	}
	signer := key
	switch a.Tamper {
	case "domain":
		m.Domain = foreignHost
	case "uri":
		m.URI = "https://" + foreignHost + "/"
	case "chain_id":
		m.ChainID = chainID + 1000
	case "expired":
		m.IssuedAt, m.ExpirationTime = now.Add(-2*time.Hour), now.Add(-time.Hour)
	case "other_signer":
		if signer, err = chain.GenerateKey(); err != nil {
			return nil, fmt.Errorf("qa_login: %w", err)
		}
	}
	text, err := m.Build()
	if err != nil {
		return fleet.Fail("qa_login: the message: %v (the nonce %q?)", err, clip.Text(nonce, 40)), nil
	}
	sig, err := signer.SignText([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("qa_login: %w", err)
	}
	body, _ := json.Marshal(map[string]string{"message": text, "signature": "0x" + hex.EncodeToString(sig)})
	send := func() (*answer, fleet.Result, error) {
		var ans *answer
		r, err := t.paced(ctx, verifyURL, func() (fleet.Result, error) {
			an, r, err := t.env.Fetcher.exchange(ctx, Request{URL: verifyURL, Method: http.MethodPost, Body: body, ContentType: "application/json", session: jar})
			ans = an
			if an != nil {
				return fleet.OK(nil), nil
			}
			return r, err
		})
		return ans, r, err
	}
	ans, r, err := send()
	if ans == nil {
		return r, err
	}
	s := sessionFrom(jar, ans)
	res["status"] = ans.resp.StatusCode
	if a.Tamper == "reuse_nonce" {
		if s == nil {
			r := fleet.Fail("qa_login: the first sign-in (before replaying its nonce) was refused with status %d", ans.resp.StatusCode)
			merge(r, res)
			return r, nil
		}
		// The very same message and signature, again.
		if ans, r, err = send(); ans == nil {
			return r, err
		}
		s = sessionFrom(jar, ans)
		res["status"] = ans.resp.StatusCode
	}
	if a.Tamper != "" {
		res["tamper"] = a.Tamper
		res["accepted"] = s != nil
		if s != nil {
			res["session"] = s.describe()
		}
		return fleet.OK(res), nil
	}
	if s == nil {
		r := fleet.Fail("qa_login: %s answered %d without a session (no cookie, no token): %s", verifyURL, ans.resp.StatusCode, clip.Text(string(ans.body), 200))
		merge(r, res)
		return r, nil
	}
	s.Given = given
	s.origin = vu.Scheme + "://" + vu.Host
	if prev != nil {
		res["rotated"] = !sharesCredential(prev, s)
	}
	t.ids.mu.Lock()
	t.ids.live[a.Identity] = s
	t.ids.mu.Unlock()
	res["session"] = s.describe()
	return fleet.OK(res), nil
}

func merge(dst fleet.Result, src map[string]any) {
	for k, v := range src {
		dst[k] = v
	}
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// nonce GETs the nonce URL: a JSON answer's "nonce" string (top level or
// one level down), else the text answer itself.
func (t *tools) nonce(ctx context.Context, nonceURL string) (string, []*http.Cookie, fleet.Result) {
	var ans *answer
	r, err := t.paced(ctx, nonceURL, func() (fleet.Result, error) {
		an, r, err := t.env.Fetcher.exchange(ctx, Request{URL: nonceURL})
		ans = an
		if an != nil {
			return fleet.OK(nil), nil
		}
		return r, err
	})
	if ans == nil {
		if r == nil {
			r = fleet.Fail("qa_login: %v", err)
		}
		return "", nil, r
	}
	if ans.resp.StatusCode/100 != 2 {
		return "", nil, fleet.Fail("qa_login: the nonce URL %s answered %d", nonceURL, ans.resp.StatusCode)
	}
	n, err := ParseNonce(ans.body)
	if err != nil {
		return "", nil, fleet.Fail("qa_login: the nonce URL %s: %v", nonceURL, err)
	}
	return n, liveCookies(ans.resp.Cookies()), nil
}

// ParseNonce reads a nonce answer: JSON with a "nonce" string at the top
// level or in an object one level down, or the body as text. The nonce
// must be what EIP-4361 allows (at least 8 letters or digits, at most 128);
// the error says what the answer held instead.
func ParseNonce(body []byte) (string, error) {
	var n string
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		n = jsonString(top, "nonce")
		for _, k := range slices.Sorted(mapsKeys(top)) {
			if n != "" {
				break
			}
			var inner map[string]json.RawMessage
			if json.Unmarshal(top[k], &inner) == nil {
				n = jsonString(inner, "nonce")
			}
		}
		if n == "" {
			return "", fmt.Errorf("a JSON answer without a \"nonce\" string")
		}
	} else {
		n = strings.TrimSpace(string(body))
	}
	if len(n) < 8 || len(n) > 128 || strings.IndexFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) >= 0 {
		return "", fmt.Errorf("%q is not a nonce (8 to 128 letters or digits)", clip.Text(n, 40))
	}
	return n, nil
}

func mapsKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func jsonString(m map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := m[key]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// tokenFields are the answer fields a bearer token is read from.
var tokenFields = []string{"token", "access_token", "accessToken", "session_token", "sessionToken", "jwt", "id_token", "session"}

// sessionFrom is the session a 2xx verify answer gives (its cookies added
// to those the nonce request set, a token field of its JSON), or nil.
func sessionFrom(jar *Session, ans *answer) *Session {
	if ans.resp.StatusCode/100 != 2 {
		return nil
	}
	s := &Session{Identity: jar.Identity, Address: jar.Address}
	fresh := liveCookies(ans.resp.Cookies())
	var top map[string]json.RawMessage
	if json.Unmarshal(ans.body, &top) == nil {
		for _, f := range tokenFields {
			if v := jsonString(top, f); len(v) >= 8 {
				s.bearer = v
				break
			}
		}
	}
	if len(fresh) == 0 && s.bearer == "" && len(jar.cookies) == 0 {
		return nil // a 2xx that signed nobody in
	}
	// The nonce's cookies, replaced by the verify answer's of the same name.
	for _, c := range jar.cookies {
		if !slices.ContainsFunc(fresh, func(f *http.Cookie) bool { return f.Name == c.Name }) {
			s.cookies = append(s.cookies, c)
		}
	}
	s.cookies = append(s.cookies, fresh...)
	return s
}

// liveCookies drops cookies an answer deletes.
func liveCookies(cs []*http.Cookie) []*http.Cookie {
	return slices.DeleteFunc(cs, func(c *http.Cookie) bool { return c.Value == "" || c.MaxAge < 0 })
}

// sharesCredential reports whether b kept a credential of a: the same
// cookie (name and value) or the same bearer token.
func sharesCredential(a, b *Session) bool {
	if a.bearer != "" && a.bearer == b.bearer {
		return true
	}
	for _, c := range a.cookies {
		if slices.ContainsFunc(b.cookies, func(d *http.Cookie) bool { return d.Name == c.Name && d.Value == c.Value }) {
			return true
		}
	}
	return false
}
