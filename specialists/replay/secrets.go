package replay

import (
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

// Secret is a credential found in a public text. It never holds the
// credential itself: only its kind, where it was assigned and its first
// characters, so a finding can say what leaked without leaking it again.
type Secret struct {
	Kind   string         // e.g. "hex private key", "AWS access key id"
	Sev    fleet.Severity // critical for keys that move funds or sign, high for tokens
	Name   string         // the variable or field it was assigned to, if any
	Prefix string         // at most the first 6 characters of the value
	Line   int            // 1-based line of the match
	start  int
	end    int
}

type secretRule struct {
	kind  string
	sev   fleet.Severity
	re    *regexp.Regexp
	value int                       // submatch holding the value (0: whole match)
	name  int                       // submatch holding the name (0: none)
	check func(name, v string) bool // extra test; nil accepts
}

var (
	// hexKeyName: the assigned name says it is a signing key, not a hash.
	privWords  = regexp.MustCompile(`(?i)priv|secret|mnemonic|signer|signing|deployer|wallet|seed`)
	hashWords  = regexp.MustCompile(`(?i)hash|digest|sha|checksum|tx|txn|root|topic|block|salt|nonce|commit|^data-|id$|address|addr$`)
	envKeyName = regexp.MustCompile(`^[A-Z0-9_]*KEY[A-Z0-9_]*$`)
	apiKeyName = regexp.MustCompile(`(?i)(^|[_-])(api|auth|access|master)[_-]?key$`)
)

func hexKeyName(name, _ string) bool {
	if hashWords.MatchString(name) {
		return false
	}
	return privWords.MatchString(name) || envKeyName.MatchString(name) || apiKeyName.MatchString(name)
}

// placeholder values docs show in place of a real credential.
var placeholderWords = regexp.MustCompile(`(?i)x{4,}|\*{3,}|your|example|placeholder|changeme|redacted|dummy|sample|<|>|\.\.\.|\$\{|\{\{`)

// evmHex is a 0x value: an address or a hash, public by nature.
var evmHex = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)

func tokenLike(_, v string) bool {
	if placeholderWords.MatchString(v) || evmHex.MatchString(v) {
		return false
	}
	letters, digits := false, false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters = true
		}
	}
	return letters && digits && entropy(v) >= 3.3
}

// mixedKey checks a value behind a documented key prefix (sk-proj-...):
// the prefix is the evidence, so unlike tokenLike it needs no digit (a
// random 40-character key has none about once in a thousand), only mixed
// case, the entropy of a random string, and no placeholder word.
func mixedKey(_, v string) bool {
	if placeholderWords.MatchString(v) || evmHex.MatchString(v) {
		return false
	}
	return strings.ToLower(v) != v && strings.ToUpper(v) != v && entropy(v) >= 3.3
}

// secretRules, most specific first: where matches overlap, the first rule wins.
var secretRules = []secretRule{
	{kind: "PEM private key", sev: fleet.SeverityCritical, re: regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----`)},
	{kind: "hex private key", sev: fleet.SeverityCritical, value: 2, name: 1, check: hexKeyName,
		re: regexp.MustCompile(`["']?\b([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']?((?:0x)?[0-9a-fA-F]{64})(?:[^0-9a-fA-F]|$)`)},
	{kind: "hex private key", sev: fleet.SeverityCritical, value: 1,
		re: regexp.MustCompile(`(?i)private[ _-]?key[^\n]{0,60}?\b((?:0x)?[0-9a-f]{64})(?:[^0-9a-f]|$)`)},
	{kind: "AWS access key id", sev: fleet.SeverityCritical, re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{kind: "AWS secret access key", sev: fleet.SeverityCritical, value: 1,
		re: regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})\b`)},
	{kind: "GitHub token", sev: fleet.SeverityHigh, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	{kind: "Google API key", sev: fleet.SeverityHigh, re: regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`)},
	{kind: "OpenAI API key", sev: fleet.SeverityHigh, check: mixedKey, re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}`)},
	{kind: "Slack token", sev: fleet.SeverityHigh, re: regexp.MustCompile(`\bxox[bpars]-[0-9A-Za-z-]{20,}`)},
	{kind: "Stripe live key", sev: fleet.SeverityHigh, re: regexp.MustCompile(`\b[rs]k_live_[0-9A-Za-z]{20,}`)},
	{kind: "JSON web token", sev: fleet.SeverityHigh, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{kind: "credential", sev: fleet.SeverityHigh, value: 2, name: 1, check: tokenLike,
		re: regexp.MustCompile(`(?i)\b((?:[a-z0-9]+[_-])?(?:api[_-]?key|secret|token|password|passwd|client[_-]?secret|access[_-]?key))\b["']?\s*[:=]\s*["']?([A-Za-z0-9_\-/+=]{16,})`)},
}

// ScanSecrets returns the credentials in text, in order of appearance, at
// most one per span: private keys (64 hex digits assigned to a name that
// says key, secret or private, or following the words "private key"; PEM
// blocks), cloud and SaaS keys by their documented prefixes, JSON web
// tokens, and high-entropy values assigned to credential-like names. A
// 64-hex value with no such name (a transaction hash, a sha256, a bytes32
// metadata key) is not a secret.
//
// The result is shared with later calls on the same text: do not modify it.
func ScanSecrets(text string) []Secret { return secretMemo.Get(text, scanSecrets) }

var secretMemo Memo[[]Secret]

func scanSecrets(text string) []Secret {
	var out []Secret
	for _, rule := range secretRules {
		for _, m := range rule.re.FindAllStringSubmatchIndex(text, -1) {
			vs, ve := m[0], m[1]
			if rule.value > 0 {
				vs, ve = m[2*rule.value], m[2*rule.value+1]
			}
			name := ""
			if rule.name > 0 && m[2*rule.name] >= 0 {
				name = text[m[2*rule.name]:m[2*rule.name+1]]
			}
			v := text[vs:ve]
			if rule.check != nil && !rule.check(name, v) {
				continue
			}
			if overlaps(out, vs, ve) {
				continue
			}
			out = append(out, Secret{Kind: rule.kind, Sev: rule.sev, Name: name, Prefix: prefix(v, 6),
				Line: strings.Count(text[:vs], "\n") + 1, start: vs, end: ve})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

func overlaps(found []Secret, s, e int) bool {
	for _, f := range found {
		if s < f.end && f.start < e {
			return true
		}
	}
	return false
}

func prefix(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

// redactSecrets replaces every credential ScanSecrets finds, every 64-hex
// value that could be a key (KeyCandidates' hex values) and every mnemonic
// phrase with "[redacted]", so no summary repeats one, on the log or in a
// record.
func redactSecrets(text string) string {
	found := ScanSecrets(text)
	for i := len(found) - 1; i >= 0; i-- {
		f := found[i]
		text = text[:f.start] + "[redacted]" + text[f.end:]
	}
	spans := trajectory.HexKeySpans(text)
	for i := len(spans) - 1; i >= 0; i-- {
		text = text[:spans[i][0]] + "[redacted]" + text[spans[i][1]:]
	}
	// Phrase windows may overlap: merge them, then cut from the last.
	var merged [][2]int
	for _, sp := range trajectory.MnemonicSpans(text) {
		if n := len(merged); n > 0 && sp[0] < merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	for i := len(merged) - 1; i >= 0; i-- {
		text = text[:merged[i][0]] + "[redacted]" + text[merged[i][1]:]
	}
	return text
}

// entropy is the Shannon entropy of s in bits per character.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// Describe says what a secret is and where, without the value.
func (s Secret) Describe() string {
	d := s.Kind
	if s.Name != "" {
		d += " assigned to " + s.Name
	}
	if s.Prefix != "" {
		d += " (begins " + s.Prefix + "…)"
	}
	return d
}

// HoldsSecret reports whether text still holds a secret of want's kind
// with want's prefix (a replay of the page that exposed it).
func HoldsSecret(text string, want Secret) bool {
	for _, s := range ScanSecrets(text) {
		if s.Kind == want.Kind && s.Prefix == want.Prefix {
			return true
		}
	}
	return false
}
