package siwe

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
)

// Message is one EIP-4361 message. Optional fields are empty or zero when
// absent.
type Message struct {
	// Scheme is the optional scheme before the domain ("https"); empty
	// means none was given.
	Scheme string
	// Domain is the RFC 3986 authority asking for the sign-in (host[:port]).
	Domain string
	// Address is the signer's 0x address; the specification wants its
	// EIP-55 mixed-case form, which Parse accepts in any case.
	Address string
	// Statement is one line of human-readable text, optional.
	Statement string
	URI       string
	Version   string // "1"
	ChainID   uint64
	// Nonce is at least 8 alphanumeric characters chosen by the server.
	Nonce          string
	IssuedAt       time.Time
	ExpirationTime time.Time // zero: none
	NotBefore      time.Time // zero: none
	RequestID      string
	Resources      []string
}

const (
	preamble    = " wants you to sign in with your Ethereum account:"
	maxMessage  = 16 << 10
	maxResource = 64
)

// Errors Parse and Validate wrap, for callers that branch on them.
var (
	ErrMalformed = errors.New("malformed EIP-4361 message")
	ErrInvalid   = errors.New("invalid EIP-4361 field")
)

// Build returns the message text, checking every field first. Times are
// written in RFC 3339 with seconds precision and UTC.
func (m Message) Build() (string, error) {
	if err := m.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	if m.Scheme != "" {
		b.WriteString(m.Scheme + "://")
	}
	b.WriteString(m.Domain + preamble + "\n")
	b.WriteString(m.Address + "\n\n")
	if m.Statement != "" {
		b.WriteString(m.Statement + "\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "URI: %s\nVersion: %s\nChain ID: %d\nNonce: %s\nIssued At: %s", m.URI, m.Version, m.ChainID, m.Nonce, stamp(m.IssuedAt))
	if !m.ExpirationTime.IsZero() {
		b.WriteString("\nExpiration Time: " + stamp(m.ExpirationTime))
	}
	if !m.NotBefore.IsZero() {
		b.WriteString("\nNot Before: " + stamp(m.NotBefore))
	}
	if m.RequestID != "" {
		b.WriteString("\nRequest ID: " + m.RequestID)
	}
	if len(m.Resources) > 0 {
		b.WriteString("\nResources:")
		for _, r := range m.Resources {
			b.WriteString("\n- " + r)
		}
	}
	return b.String(), nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Validate checks every field as the specification constrains it; the
// error wraps ErrInvalid and names the field.
func (m Message) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	}
	if m.Scheme != "" && !isScheme(m.Scheme) {
		return bad("scheme", "%q is not a URI scheme", m.Scheme)
	}
	if m.Domain == "" || strings.ContainsAny(m.Domain, " \t\r\n/?#@") {
		return bad("domain", "%q is not a host[:port] authority", m.Domain)
	}
	if !isAddress(m.Address) {
		return bad("address", "%q is not 0x followed by 40 hex digits", m.Address)
	}
	if strings.ContainsAny(m.Statement, "\r\n") {
		return bad("statement", "holds a line break")
	}
	if u, err := url.Parse(m.URI); err != nil || u.Scheme == "" || strings.ContainsAny(m.URI, " \t\r\n") {
		return bad("uri", "%q is not an absolute URI", m.URI)
	}
	if m.Version != "1" {
		return bad("version", "%q, want 1", m.Version)
	}
	if m.ChainID == 0 {
		return bad("chain id", "0 (want the EIP-155 chain id)")
	}
	if len(m.Nonce) < 8 || !alnum(m.Nonce) {
		return bad("nonce", "%q, want at least 8 letters or digits", m.Nonce)
	}
	if m.IssuedAt.IsZero() {
		return bad("issued at", "missing")
	}
	if strings.ContainsAny(m.RequestID, "\r\n") {
		return bad("request id", "holds a line break")
	}
	if len(m.Resources) > maxResource {
		return bad("resources", "%d, at most %d", len(m.Resources), maxResource)
	}
	for _, r := range m.Resources {
		if u, err := url.Parse(r); err != nil || u.Scheme == "" || strings.ContainsAny(r, " \t\r\n") {
			return bad("resources", "%q is not an absolute URI", r)
		}
	}
	return nil
}

// Parse reads an EIP-4361 message. It never panics; an error wraps
// ErrMalformed (the layout) or ErrInvalid (a field) and names the line.
func Parse(text string) (Message, error) {
	var m Message
	if len(text) > maxMessage {
		return m, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(text), maxMessage)
	}
	lines := strings.Split(text, "\n")
	n := 0
	next := func() (string, bool) {
		if n >= len(lines) {
			return "", false
		}
		n++
		return lines[n-1], true
	}
	bad := func(format string, args ...any) (Message, error) {
		return Message{}, fmt.Errorf("%w: line %d: %s", ErrMalformed, n, fmt.Sprintf(format, args...))
	}
	head, _ := next()
	origin, ok := strings.CutSuffix(head, preamble)
	if !ok {
		return bad("want %q after the domain", strings.TrimSpace(preamble))
	}
	if s, d, ok := strings.Cut(origin, "://"); ok {
		m.Scheme, origin = s, d
	}
	m.Domain = origin
	if m.Address, ok = next(); !ok {
		return bad("no address line")
	}
	if l, ok := next(); !ok || l != "" {
		return bad("want an empty line after the address")
	}
	l, ok := next()
	if !ok {
		return bad("message ends after the address")
	}
	if l != "" {
		m.Statement = l
		if l, ok = next(); !ok || l != "" {
			return bad("want an empty line after the statement")
		}
	}
	type field struct {
		tag      string
		optional bool
		set      func(string) error
	}
	parseTime := func(dst *time.Time) func(string) error {
		return func(v string) error {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return fmt.Errorf("%q is not an RFC 3339 time", v)
			}
			*dst = t
			return nil
		}
	}
	str := func(dst *string) func(string) error { return func(v string) error { *dst = v; return nil } }
	fields := []field{
		{"URI: ", false, str(&m.URI)},
		{"Version: ", false, str(&m.Version)},
		{"Chain ID: ", false, func(v string) error {
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil || strconv.FormatUint(id, 10) != v {
				return fmt.Errorf("%q is not a decimal chain id", v)
			}
			m.ChainID = id
			return nil
		}},
		{"Nonce: ", false, str(&m.Nonce)},
		{"Issued At: ", false, parseTime(&m.IssuedAt)},
		{"Expiration Time: ", true, parseTime(&m.ExpirationTime)},
		{"Not Before: ", true, parseTime(&m.NotBefore)},
		{"Request ID: ", true, str(&m.RequestID)},
	}
	l, ok = next()
	for _, f := range fields {
		if !ok {
			if f.optional {
				continue
			}
			return bad("message ends before %q", strings.TrimSpace(f.tag))
		}
		v, has := strings.CutPrefix(l, f.tag)
		if !has {
			if f.optional {
				continue
			}
			return bad("want %q", strings.TrimSpace(f.tag))
		}
		if err := f.set(v); err != nil {
			return bad("%s %v", strings.TrimSuffix(f.tag, " "), err)
		}
		l, ok = next()
	}
	if ok && l == "Resources:" {
		for l, ok = next(); ok; l, ok = next() {
			r, has := strings.CutPrefix(l, "- ")
			if !has {
				return bad("want \"- \" and a resource URI")
			}
			m.Resources = append(m.Resources, r)
			if len(m.Resources) > maxResource {
				return bad("more than %d resources", maxResource)
			}
		}
	} else if ok {
		return bad("unexpected %q", short(l))
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

// short shortens s for a message (clip.Text at 40 bytes).
func short(s string) string { return clip.Text(s, 40) }

func isAddress(s string) bool {
	if len(s) != 42 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for _, c := range s[2:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func alnum(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isScheme(s string) bool {
	for i, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// Expired reports whether m has expired at now, or is not yet valid.
func (m Message) Expired(now time.Time) bool {
	return !m.ExpirationTime.IsZero() && !now.Before(m.ExpirationTime) || !m.NotBefore.IsZero() && now.Before(m.NotBefore)
}
