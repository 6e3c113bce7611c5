package authz

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/docclaims"
	"github.com/qafleet/fleetd/siwe"
)

// Doc is one fetched doc page.
type Doc struct {
	URL, ContentType, Text string
}

// Endpoint is one documented endpoint with the doc line that names it.
type Endpoint struct {
	Method, URL, Quote string
	// Role is the role the docs reserve it for ("admin"), "" for any
	// signed-in user.
	Role string
	// Writable are the request fields the docs list as writable (an
	// update's), nil when they list none.
	Writable []string
}

// Flow is what the docs say about signing in and what lies behind it.
type Flow struct {
	Nonce, Verify, Logout, Me Endpoint
	ChainID                   uint64
	// Objects are GET endpoints templated with an identity's address or id
	// ({address}, {id}, :account, ...); Updates the PATCH or PUT ones.
	Objects, Updates []Endpoint
	// Reserved are endpoints the docs reserve for a role.
	Reserved []Endpoint
	// Evidence is the doc line the flow was learned from (the verify
	// endpoint's).
	Evidence string
}

// SignIn reports whether the flow has both steps of a SIWE login.
func (f Flow) SignIn() bool { return f.Nonce.URL != "" && f.Verify.URL != "" }

var (
	reNonce    = regexp.MustCompile(`(?i)nonce`)
	reVerify   = regexp.MustCompile(`(?i)verify|sign-?in|login|siwe|session`)
	reLogout   = regexp.MustCompile(`(?i)log-?out|sign-?out|sign out`)
	reMe       = regexp.MustCompile(`(?i)/(me|whoami|self|account|session)/?$`)
	reRole     = regexp.MustCompile(`(?i)\b(admins?|administrators?|moderators?|operators?|staff|owners? only|superusers?)\b[^.]{0,40}\b(only|role|required)\b|\b(only|role|required)\b[^.]{0,20}\b(admins?|administrators?|moderators?|staff|operators?)\b|/(admin|internal|staff|mod)(/|$)`)
	reRoleWord = regexp.MustCompile(`(?i)\b(admin|administrator|moderator|operator|staff|superuser)s?\b`)
	reChainID  = regexp.MustCompile(`(?i)chain[ _-]?id\D{0,12}(\d{1,12})`)
	reWritable = regexp.MustCompile("(?i)(?:writable|updatable|editable|you (?:can|may) (?:change|set|update))[^:\n|]{0,40}:([^\n|.;]{1,300})")
	reField    = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]{0,40})`|\\b([a-z][a-z0-9_]{1,40})\\b")
)

// LearnFlow reads the sign-in flow and the endpoints behind it from the
// docs. It is pure (a parser of outside input: fuzzed); what the docs do
// not say is left empty.
func LearnFlow(docs []Doc) Flow {
	var f Flow
	seen := map[string]bool{}
	for _, d := range docs {
		if m := reChainID.FindStringSubmatch(d.Text); m != nil && f.ChainID == 0 {
			f.ChainID, _ = strconv.ParseUint(m[1], 10, 64)
		}
		lines := strings.Split(d.Text, "\n")
		for _, c := range docclaims.Claims(d.URL, d.ContentType, d.Text) {
			// Placeholders come back escaped ({address} as %7Baddress%7D).
			raw := strings.NewReplacer("%7B", "{", "%7b", "{", "%7D", "}", "%7d", "}").Replace(c.URL)
			key := c.Method + " " + raw
			if seen[key] {
				continue
			}
			seen[key] = true
			path := pathOf(raw)
			e := Endpoint{Method: c.Method, URL: raw, Quote: c.Quote}
			// The mention and the next line hold what the docs say of it.
			around := c.Quote
			if c.Line > 0 && c.Line < len(lines) {
				around += " " + lines[c.Line]
			}
			switch {
			case c.Method == "GET" && reNonce.MatchString(path):
				if f.Nonce.URL == "" {
					f.Nonce = e
				}
				continue
			case c.Method == "POST" && reLogout.MatchString(path):
				if f.Logout.URL == "" {
					f.Logout = e
				}
				continue
			case c.Method == "POST" && reVerify.MatchString(path) && !reNonce.MatchString(path):
				if f.Verify.URL == "" {
					f.Verify, f.Evidence = e, c.Quote
				}
				continue
			case c.Method == "GET" && reMe.MatchString(path) && siwe.IdentityVar(path) == "":
				if f.Me.URL == "" {
					f.Me = e
				}
				continue
			}
			if reRole.MatchString(c.Quote) || reRole.MatchString(path) {
				e.Role = "admin"
				if m := reRoleWord.FindStringSubmatch(c.Quote); m != nil && !strings.EqualFold(m[1], "administrator") {
					e.Role = strings.ToLower(m[1])
				}
				if c.Method == "GET" {
					f.Reserved = append(f.Reserved, e)
				}
				continue
			}
			if siwe.IdentityVar(raw) == "" {
				continue
			}
			switch c.Method {
			case "GET":
				f.Objects = append(f.Objects, e)
			case "PATCH", "PUT":
				if e.Writable = writable(c.Quote); e.Writable == nil {
					e.Writable = writable(around)
				}
				f.Updates = append(f.Updates, e)
			}
		}
	}
	return f
}

// writable reads a "Writable fields: `a`, `b`" list.
func writable(text string) []string {
	m := reWritable.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	var out []string
	code := strings.Contains(m[1], "`")
	for _, f := range reField.FindAllStringSubmatch(m[1], -1) {
		name := f[1]
		if !code && name == "" {
			name = f[2]
		}
		if name != "" && !slices.Contains(out, name) && !stopWord[name] {
			out = append(out, name)
		}
	}
	return out
}

var stopWord = map[string]bool{"and": true, "or": true, "the": true, "fields": true, "field": true, "only": true}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

// Fill puts identity values into a templated URL (siwe.Fill).
func Fill(raw, addr, id string) string { return siwe.Fill(raw, addr, id) }
