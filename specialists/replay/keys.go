package replay

import (
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/trajectory"
)

// KeyCandidate is a value in a public text that may be a private key
// controlling an account: 64 hex digits (with or without 0x, named or not),
// a PEM private key block, or a BIP-39 mnemonic phrase (12 to 24 words of
// the English list whose checksum matches; it controls the accounts its
// seed derives). Whether it is one is for the chain to say: a
// security rule derives its address and looks at its balance, nonce and
// roles. The value stays in memory for that; only Describe goes into a
// finding.
type KeyCandidate struct {
	Kind   string // "hex", "PEM" or "mnemonic"
	Name   string // the name it is assigned to, if any
	Named  bool   // the name (or the words before it) say it is a private key
	Prefix string // at most the first 6 characters
	Line   int    // 1-based
	value  string
	start  int // byte offset of value in the text
}

// Overlaps reports whether two candidates of one text share bytes: two
// readings of one run of list words as a phrase, of which at most one is
// what a wallet made.
func (c KeyCandidate) Overlaps(o KeyCandidate) bool {
	return c.start < o.start+len(o.value) && o.start < c.start+len(c.value)
}

// Value is the candidate's text: 64 hex digits (0x kept), a PEM block or
// a phrase as the text wrote it (Words reads its words). Never put it in a finding, a note or a tool call.
func (c KeyCandidate) Value() string { return c.value }

// Words are a mnemonic candidate's words in lower case, as a wallet joins
// them for the seed; nil for other kinds.
func (c KeyCandidate) Words() []string {
	if c.Kind != "mnemonic" {
		return nil
	}
	return trajectory.MnemonicWords(c.value)
}

// Describe says what the candidate is and where, without the value (of a
// phrase, not even a word: its first word is 11 bits of the secret).
func (c KeyCandidate) Describe() string {
	d := "a 64-hex-digit value"
	switch c.Kind {
	case "PEM":
		d = "a PEM private key"
	case "mnemonic":
		d = "a " + itoa(len(c.Words())) + "-word mnemonic phrase (BIP-39, valid checksum)"
	}
	if c.Name != "" {
		d += " assigned to " + c.Name
	} else if c.Kind != "PEM" {
		d += " with no name"
	}
	if c.Kind == "mnemonic" {
		return d + " (line " + itoa(c.Line) + ")"
	}
	return d + " (line " + itoa(c.Line) + ", begins " + c.Prefix + "…)"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// assignedName finds the name a value is assigned to, just before it.
var assignedName = regexp.MustCompile(`["']?\b([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*[:=]\s*["']?$`)

// privatePhrase: the words "private key" shortly before a value.
var privatePhrase = regexp.MustCompile(`(?i)private[ _-]?key`)

// seedPhrase: words before a mnemonic that say it is one.
var seedPhrase = regexp.MustCompile(`(?i)mnemonic|seed|recovery|secret|phrase|wallet|private|backup`)

var pemBegin = regexp.MustCompile(`-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----`)

// maxCandidates bounds the candidates read from one text.
const maxCandidates = 64

// KeyCandidates returns the possible private keys in text, in order: every
// 64-hex value the run records' redaction treats as a possible key
// (trajectory.HexKeySpans: not a labelled digest such as "tx 0x…", not an
// ABI word with 16 leading zeros, not a whole text that is one 0x value),
// every PEM private key block, and every mnemonic phrase the redaction
// finds (trajectory.MnemonicSpans; windows of one run of list words may
// overlap). Named is set when the assigned name or the words before say
// private key (of a phrase: mnemonic, seed, recovery, secret, wallet, ...).
// The result is shared: do not modify.
func KeyCandidates(text string) []KeyCandidate { return candidateMemo.Get(text, keyCandidates) }

var candidateMemo Memo[[]KeyCandidate]

func keyCandidates(text string) []KeyCandidate {
	var out []KeyCandidate
	for _, sp := range trajectory.HexKeySpans(text) {
		if len(out) == maxCandidates {
			break
		}
		v := text[sp[0]:sp[1]]
		before := text[max(0, sp[0]-80):sp[0]]
		if i := strings.LastIndexByte(before, '\n'); i >= 0 {
			before = before[i+1:]
		}
		c := KeyCandidate{Kind: "hex", Prefix: prefix(v, 6), Line: strings.Count(text[:sp[0]], "\n") + 1, value: v, start: sp[0]}
		if m := assignedName.FindStringSubmatch(before); m != nil {
			c.Name = m[1]
		}
		c.Named = c.Name != "" && hexKeyName(c.Name, v) || privatePhrase.MatchString(before)
		out = append(out, c)
	}
	for _, loc := range pemBegin.FindAllStringIndex(text, -1) {
		if len(out) == maxCandidates {
			break
		}
		end := len(text)
		if e := strings.Index(text[loc[1]:], "-----END "); e >= 0 {
			end = loc[1] + e
			if c := strings.Index(text[end+len("-----END "):], "-----"); c >= 0 {
				end += len("-----END ") + c + 5
			}
		}
		out = append(out, KeyCandidate{Kind: "PEM", Named: true, Prefix: prefix(text[loc[0]:], 6),
			Line: strings.Count(text[:loc[0]], "\n") + 1, value: text[loc[0]:end], start: loc[0]})
	}
	for _, sp := range trajectory.MnemonicSpans(text) {
		if len(out) == maxCandidates {
			break
		}
		before := text[max(0, sp[0]-80):sp[0]]
		// A phrase's label is on its line or the line above (a heading).
		if i := strings.LastIndexByte(before, '\n'); i >= 0 {
			if j := strings.LastIndexByte(before[:i], '\n'); j >= 0 {
				before = before[j+1:]
			}
		}
		c := KeyCandidate{Kind: "mnemonic", Prefix: prefix(text[sp[0]:sp[1]], 6),
			Line: strings.Count(text[:sp[0]], "\n") + 1, value: text[sp[0]:sp[1]], start: sp[0]}
		if m := assignedName.FindStringSubmatch(before); m != nil {
			c.Name = m[1]
		}
		c.Named = c.Name != "" && hexKeyName(c.Name, "") || seedPhrase.MatchString(before)
		out = append(out, c)
	}
	return out
}
