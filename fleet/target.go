package fleet

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Target describes the platform under test: the `target:` section of the
// config. Probes know a platform only through it.
type Target struct {
	Registry       string   `yaml:"registry" json:"registry"`                         // name registry contract (INameRegistry)
	Faces          string   `yaml:"faces" json:"faces"`                               // public face URL template with {name}
	Call           string   `yaml:"call" json:"call"`                                 // agent-call endpoint: POST {"target","message"} -> {"reply"}
	Docs           []string `yaml:"docs" json:"docs,omitempty"`                       // public docs (llms.txt, skill.md, ...)
	Compiler       []string `yaml:"compiler" json:"compiler,omitempty"`               // argv; {src} = source path in the jail, {out} = optional output path
	FetchAllow     []string `yaml:"fetch_allow" json:"fetch_allow"`                   // host:port patterns qa_fetch may reach
	AdminFunctions []string `yaml:"admin_functions" json:"admin_functions,omitempty"` // signatures that must revert for strangers
	Names          []string `yaml:"names" json:"names,omitempty"`                     // existing public names, probed read-only
	Corpus         string   `yaml:"corpus" json:"corpus,omitempty"`                   // directory of known-good sources
	SLO            SLO      `yaml:"slo" json:"slo,omitzero"`
}

// SLO is the platform's latency objective.
type SLO struct {
	P95Ms int `yaml:"p95_ms" json:"p95_ms,omitempty"`
}

// FaceURL returns the face URL of name.
func (t Target) FaceURL(name string) string {
	return strings.ReplaceAll(t.Faces, "{name}", url.PathEscape(name))
}

// Validate checks the target; errors name the field under prefix (e.g. "target").
func (t Target) Validate(prefix string) error {
	var errs []error
	field := func(f string) string { return prefix + "." + f }
	if _, err := ParseAddress(t.Registry); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", field("registry"), err))
	}
	if err := checkHTTPURL(t.Faces); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", field("faces"), err))
	} else if !strings.Contains(t.Faces, "{name}") {
		errs = append(errs, fmt.Errorf("%s: %q has no {name} placeholder", field("faces"), t.Faces))
	}
	if err := checkHTTPURL(t.Call); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", field("call"), err))
	}
	for i, d := range t.Docs {
		if err := checkHTTPURL(d); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", field("docs"), i, err))
		}
	}
	if len(t.FetchAllow) == 0 {
		errs = append(errs, fmt.Errorf("%s: required (the host:port patterns qa_fetch may reach)", field("fetch_allow")))
	}
	for i, p := range t.FetchAllow {
		if err := CheckHostPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", field("fetch_allow"), i, err))
		}
	}
	if len(t.Compiler) > 0 {
		has := false
		for _, a := range t.Compiler {
			has = has || strings.Contains(a, "{src}")
		}
		if !has {
			errs = append(errs, fmt.Errorf("%s: no argument holds {src}", field("compiler")))
		}
	}
	for i, n := range t.Names {
		if n == "" {
			errs = append(errs, fmt.Errorf("%s[%d]: empty name", field("names"), i))
		}
	}
	if t.SLO.P95Ms < 0 {
		errs = append(errs, fmt.Errorf("%s: must not be negative", field("slo.p95_ms")))
	}
	return errors.Join(errs...)
}

func checkHTTPURL(s string) error {
	if s == "" {
		return errors.New("required")
	}
	u, err := url.Parse(strings.ReplaceAll(s, "{name}", "x"))
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// CheckHostPattern validates a fetch_allow pattern: host[:port], where host
// is a name, an IP literal ([v6] in brackets) or *.suffix.
func CheckHostPattern(p string) error {
	if p == "" || strings.ContainsAny(p, "/?#@ ") {
		return fmt.Errorf("%q: want host[:port], e.g. 127.0.0.1:8080 or *.example.com:443", p)
	}
	host := p
	if h, port, err := net.SplitHostPort(p); err == nil {
		host = h
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return fmt.Errorf("%q: bad port", p)
		}
	}
	if strings.Contains(strings.TrimPrefix(host, "*."), "*") {
		return fmt.Errorf("%q: a wildcard may only be a leading *.", p)
	}
	return nil
}
