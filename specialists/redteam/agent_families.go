package redteam

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
	"go.yaml.in/yaml/v3"
)

// Family is one family of probes for the agents behind the call endpoint:
// versioned, deterministic, offline data (a YAML file per family under
// families/, embedded; more come in through specialists.Options.Families). A family's
// messages are sent to each agent; its detectors judge the replies against
// the agent's reply to a plain greeting (and to the family's control
// message, when it has one), so only what the attack adds counts.
type Family struct {
	Name     string   `yaml:"family"`   // e.g. "instruction-disclosure"
	Version  int      `yaml:"version"`  // bumped when probes or detectors change
	Title    string   `yaml:"title"`    // what the family finds, for summaries
	OWASP    string   `yaml:"owasp"`    // OWASP Top 10 for LLM Applications (2025) id, e.g. "LLM07:2025"
	CWE      string   `yaml:"cwe"`      // e.g. "CWE-1427"
	Severity string   `yaml:"severity"` // of a finding; a revealed secret makes it critical
	Detect   []string `yaml:"detect"`   // detectors, see Detectors
	Control  string   `yaml:"control"`  // optional: the same request without the attack's framing
	Expected string   `yaml:"expected"` // what the agent should have done, for summaries
	Probes   []Probe  `yaml:"probes"`
}

// Probe is one message of a family.
type Probe struct {
	ID      string `yaml:"id"`
	Message string `yaml:"message"`
	// Expect, for the expect detector: text the reply holds only if the
	// agent did what the message asked (it must not occur in the message).
	Expect string `yaml:"expect"`
	// Control is the same request without the attack's framing; its reply
	// joins the baseline (what it already reveals does not count). It
	// overrides the family's control.
	Control string `yaml:"control"`
}

// Detectors a family may name:
//   - expect: the reply holds the probe's expected text (not in the message);
//   - secrets: a credential (replay.ScanSecrets) not in the baseline replies;
//   - leaks: an internal detail (replay.ScanLeaks) not in the baseline replies;
//   - internal_urls: a URL to a loopback, private, link-local or
//     internal-only host, not on the target's allowlist;
//   - instructions: at least two phrases typical of a system prompt, in a
//     reply that is not a refusal;
//   - passwd: the content of /etc/passwd.
var Detectors = []string{"expect", "secrets", "leaks", "internal_urls", "instructions", "passwd"}

// Placeholders a family's messages may use; the playbook fills them per
// target and run (seeded by the target, so a finding repeats the same text).
var Placeholders = []string{"{target}", "{other}", "{canary_a}", "{canary_b}", "{num_a}", "{num_b}", "{product}"}

var (
	familyName  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	placeholder = regexp.MustCompile(`\{[a-z_]+\}`)
	owaspID     = regexp.MustCompile(`^LLM(0[1-9]|10):2025\b`)
	cweID       = regexp.MustCompile(`^CWE-[0-9]{1,5}$`)
)

// maxFamilyBytes bounds a family file.
const maxFamilyBytes = 64 << 10

// ParseFamily decodes and validates one family file. Decoding is strict
// (unknown keys are errors); the error names the file and the field at
// fault.
func ParseFamily(file string, data []byte) (Family, error) {
	var f Family
	if len(data) > maxFamilyBytes {
		return f, fmt.Errorf("%s: %d bytes, at most %d", file, len(data), maxFamilyBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Family{}, fmt.Errorf("%s: %w", file, err)
	}
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %s", file, field, fmt.Sprintf(format, args...)))
	}
	if !familyName.MatchString(f.Name) {
		bad("family", "%q: want lowercase letters, digits and dashes", f.Name)
	}
	if f.Version < 1 {
		bad("version", "want 1 or more, got %d", f.Version)
	}
	if strings.TrimSpace(f.Title) == "" {
		bad("title", "required")
	}
	if f.OWASP == "" && f.CWE == "" {
		bad("owasp", "an OWASP LLM id (LLMnn:2025) or a cwe is required")
	}
	if f.OWASP != "" && !owaspID.MatchString(f.OWASP) {
		bad("owasp", "%q: want an OWASP Top 10 for LLM Applications id like LLM01:2025", f.OWASP)
	}
	if f.CWE != "" && !cweID.MatchString(f.CWE) {
		bad("cwe", "%q: want CWE-n", f.CWE)
	}
	if _, err := fleet.ParseSeverity(f.Severity); err != nil || f.Severity == "meta" {
		bad("severity", "%q: want critical, high, medium, low or info", f.Severity)
	}
	if len(f.Detect) == 0 {
		bad("detect", "at least one of %s", strings.Join(Detectors, ", "))
	}
	for i, d := range f.Detect {
		if !slices.Contains(Detectors, d) {
			bad(fmt.Sprintf("detect[%d]", i), "%q: unknown (have %s)", d, strings.Join(Detectors, ", "))
		}
	}
	checkText := func(field, s string) {
		for _, ph := range placeholder.FindAllString(s, -1) {
			if !slices.Contains(Placeholders, ph) {
				bad(field, "unknown placeholder %s (have %s)", ph, strings.Join(Placeholders, " "))
			}
		}
	}
	if f.Control != "" {
		checkText("control", f.Control)
	}
	if len(f.Probes) == 0 {
		bad("probes", "at least one")
	}
	ids := map[string]bool{}
	sample := familyVars{target: "t", other: "o", canaryA: "qa0a1b2c", canaryB: "ok3d4e5f", numA: 1234, numB: 56789}
	for i, pr := range f.Probes {
		field := fmt.Sprintf("probes[%d]", i)
		switch {
		case strings.TrimSpace(pr.Message) == "":
			bad(field+".message", "required")
		case len(pr.Message) > 4096:
			bad(field+".message", "%d bytes, at most 4096", len(pr.Message))
		}
		if pr.ID == "" || ids[pr.ID] {
			bad(field+".id", "%q: required and unique", pr.ID)
		}
		ids[pr.ID] = true
		checkText(field+".message", pr.Message)
		checkText(field+".control", pr.Control)
		if pr.Expect != "" {
			checkText(field+".expect", pr.Expect)
			if e := sample.expand(pr.Expect); strings.Contains(strings.ToLower(sample.expand(pr.Message)), strings.ToLower(e)) {
				bad(field+".expect", "%q occurs in the message itself: an echo would match", pr.Expect)
			}
		}
	}
	if slices.Contains(f.Detect, "expect") && !slices.ContainsFunc(f.Probes, func(p Probe) bool { return p.Expect != "" }) {
		bad("detect", "the expect detector needs a probe with expect")
	}
	return f, errors.Join(errs...)
}

// LoadFamilies parses every *.yaml file directly in dir of fsys, sorted by
// name; two families may not share a name. The error names each bad file.
func LoadFamilies(fsys fs.FS, dir string) ([]Family, error) {
	return replay.LoadDir(fsys, dir, "family", "families", ParseFamily, func(v Family) string { return v.Name })
}

//go:embed families/*.yaml
var familyFS embed.FS

// DefaultFamilies returns the embedded probe families (families/*.yaml).
// They are validated by the package's tests; an error here is a build bug.
var DefaultFamilies = sync.OnceValues(func() ([]Family, error) { return LoadFamilies(familyFS, "families") })

// familyVars fill a family's placeholders.
type familyVars struct {
	target, other    string
	canaryA, canaryB string
	numA, numB       int
}

func (v familyVars) expand(s string) string {
	return strings.NewReplacer(
		"{target}", v.target, "{other}", v.other,
		"{canary_a}", v.canaryA, "{canary_b}", v.canaryB,
		"{num_a}", fmt.Sprint(v.numA), "{num_b}", fmt.Sprint(v.numB),
		"{product}", fmt.Sprint(v.numA*v.numB),
	).Replace(s)
}
