package sarif

import (
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// class is a cluster's rule: a CWE when the finding names one (the
// security checks write "(CWE-79)" into their summaries) or its kind is a
// known weakness, else fleetd/<surface>[/<kind>].
type class struct {
	id   string // the ruleId: "CWE-79" or "fleetd/compiler/crash"
	cwe  string // "79", or ""
	name string // a short description
}

var cweRE = regexp.MustCompile(`\bCWE-([0-9]{1,5})\b`)

// cweNames are the weaknesses fleetd's checks report, for the rules'
// short descriptions.
var cweNames = map[string]string{
	"22":   "Path traversal",
	"79":   "Cross-site scripting",
	"113":  "HTTP response splitting",
	"200":  "Exposure of sensitive information",
	"209":  "Error message containing sensitive information",
	"284":  "Improper access control",
	"290":  "Authentication bypass by spoofing",
	"319":  "Cleartext transmission of sensitive information",
	"400":  "Uncontrolled resource consumption",
	"538":  "Sensitive information in an externally accessible file",
	"601":  "Open redirect",
	"693":  "Protection mechanism failure",
	"942":  "Permissive cross-domain policy",
	"1427": "Improper neutralization of input used for LLM prompting",
}

// kinds map what a title says (first match wins) to a kind and, where
// the kind is a weakness, its CWE.
var kinds = []struct {
	re   *regexp.Regexp
	kind string
	cwe  string
}{
	{regexp.MustCompile(`(?i)\black security headers\b`), "security-headers", "693"},
	{regexp.MustCompile(`(?i)\bover plain http\b`), "mixed-content", "319"},
	{regexp.MustCompile(`(?i)\bpublicly readable\b`), "exposed-file", "538"},
	{regexp.MustCompile(`\bCORS\b`), "cors", "942"},
	{regexp.MustCompile(`(?i)\bspoofed identity\b`), "spoofed-identity", "290"},
	{regexp.MustCompile(`(?i)\bleaks internals\b`), "leaked-internals", "209"},
	{regexp.MustCompile(`(?i)\bexposes [0-9]+ secret`), "exposed-secret", "200"},
	{regexp.MustCompile(`(?i)\badmin function\b.*\bdoes not revert\b`), "access-control", "284"},
	{regexp.MustCompile(`(?i)\bresource exhaustion\b|\bout of memory\b`), "resource-exhaustion", "400"},
	{regexp.MustCompile(`(?i)\bcrash(es|ed)?\b|\bpanic\b`), "crash", ""},
	{regexp.MustCompile(`(?i)\bhang(s)?\b`), "hang", ""},
	{regexp.MustCompile(`(?i)\blatency\b`), "latency", ""},
	{regexp.MustCompile(`(?i)\bsuper-linearly\b`), "complexity", ""},
	{regexp.MustCompile(`(?i)\bdead link\b`), "dead-link", ""},
	{regexp.MustCompile(`(?i)\bdocs promise\b`), "docs-contract", ""},
	{regexp.MustCompile(`(?i)\bgas estimate\b`), "gas-estimate", ""},
}

func classify(c fleet.Cluster) class {
	if m := cweRE.FindStringSubmatch(c.Title); m != nil {
		n := strings.TrimLeft(m[1], "0")
		return cweClass(n)
	}
	surface := string(c.Surface)
	if surface == "" {
		surface = "free-form"
	}
	for _, k := range kinds {
		if !k.re.MatchString(c.Title) {
			continue
		}
		if k.cwe != "" {
			return cweClass(k.cwe)
		}
		return class{id: "fleetd/" + surface + "/" + k.kind, name: k.kind + " on the " + surface + " surface"}
	}
	return class{id: "fleetd/" + surface, name: "finding on the " + surface + " surface"}
}

func cweClass(n string) class {
	name := cweNames[n]
	if name == "" {
		name = "CWE-" + n
	}
	return class{id: "CWE-" + n, cwe: n, name: name}
}

func newRule(cl class) *Rule {
	r := &Rule{
		ID:               cl.id,
		Name:             ruleName(cl.id),
		ShortDescription: &Message{Text: cl.name},
		Properties:       map[string]any{},
	}
	if cl.cwe != "" {
		r.HelpURI = "https://cwe.mitre.org/data/definitions/" + cl.cwe + ".html"
		// GitHub code scanning reads CWE tags in this form.
		r.Properties["tags"] = []string{"security", "external/cwe/cwe-" + pad3(cl.cwe)}
	} else {
		r.Properties["tags"] = []string{"correctness"}
	}
	return r
}

// ruleName is the id as an identifier: "CWE79", "FleetdCompilerCrash".
func ruleName(id string) string {
	var b strings.Builder
	up := true
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z':
			if up {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			up = false
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			up = false
		default:
			up = true
		}
	}
	return b.String()
}

func pad3(n string) string {
	for len(n) < 3 {
		n = "0" + n
	}
	return n
}

// securitySeverity is the CVSS-like score GitHub ranks security alerts
// by, from the severity.
func securitySeverity(c fleet.Cluster) float64 {
	switch c.Severity {
	case fleet.SeverityCritical:
		return 9.5
	case fleet.SeverityHigh:
		return 8.0
	case fleet.SeverityMedium:
		return 5.5
	case fleet.SeverityLow:
		return 3.0
	}
	return 0
}
