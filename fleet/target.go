package fleet

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
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
	// Repo is the source repository behind the platform's surfaces: what the
	// fix stage repairs and what coverage-guided fuzzing builds. Optional.
	Repo *Repo `yaml:"repo" json:"repo,omitempty"`
	// ABIs are extra contract ABIs (JSON: solc's array, or a Hardhat or
	// Foundry artifact) that name the registry's functions for the surface
	// check: files (relative to the config) or http(s) URLs on fetch_allow,
	// which the run fetches. Optional.
	ABIs []string `yaml:"abis" json:"abis,omitempty"`
	// Auth is the platform's sign-in, for a flow its docs do not spell
	// out, and the test accounts operators give by role. Optional.
	Auth *Auth `yaml:"auth" json:"auth,omitempty"`
}

// Repo is the `target.repo` section: a repository that owns some of the
// target's surfaces (a compiler finding goes to the compiler's repository).
type Repo struct {
	// URL is a git URL (https://, ssh://, git@host:path, file://) or a local
	// directory holding a git repository (relative to the config file).
	URL string `yaml:"url" json:"url"`
	// Base is the branch fixes are made against; default "main".
	Base string `yaml:"base" json:"base,omitempty"`
	// Test is the repository's test command (argv, run at the repository
	// root); default ["go", "test", "./..."].
	Test []string `yaml:"test" json:"test,omitempty"`
	// FuzzPackage and FuzzTarget name a Go native fuzz target: the package
	// directory relative to the repository root (e.g. "./compiler") and the
	// function (e.g. "FuzzCompile"). Both or neither.
	FuzzPackage string `yaml:"fuzz_package" json:"fuzz_package,omitempty"`
	FuzzTarget  string `yaml:"fuzz_target" json:"fuzz_target,omitempty"`
	// Build is the command (argv, run at the repository root) that builds
	// the C or C++ target for instrumented AFL++: {out} is the binary to
	// write; CC and CXX name afl-clang-fast and afl-clang-fast++,
	// $LIB_FUZZING_ENGINE is -fsanitize=fuzzer when Harness is set and
	// {harness} is its path. Without a harness the binary stands in for
	// target.compiler's first argument. Optional.
	Build []string `yaml:"build" json:"build,omitempty"`
	// Harness is a C or C++ file (relative to the repository root) defining
	// LLVMFuzzerTestOneInput; Build links it with $LIB_FUZZING_ENGINE for
	// AFL++'s persistent mode. Without target.compiler the harness is the
	// fuzz target on its own (qa_fuzz auto runs AFL++ on it). Optional;
	// needs Build.
	Harness string `yaml:"harness" json:"harness,omitempty"`
	// Regression is where a regression test goes when the repository has no
	// Go fuzz target.
	Regression Regression `yaml:"regression" json:"regression,omitzero"`
	// Surfaces lists the surfaces this repository owns (e.g. ["compiler"]);
	// empty means every surface.
	Surfaces []string `yaml:"surfaces" json:"surfaces,omitempty"`
}

// Regression is a repository's layout for regression tests in languages
// other than Go: Dir (relative to the repository root), File (a file name
// pattern where {fp} is the finding's fingerprint, e.g. "regress_{fp}.sh")
// and Test (argv running that one test; {file} is its path).
type Regression struct {
	Dir  string   `yaml:"dir" json:"dir,omitempty"`
	File string   `yaml:"file" json:"file,omitempty"`
	Test []string `yaml:"test" json:"test,omitempty"`
}

// Owns reports whether the repository owns findings on surface s.
func (r *Repo) Owns(s Surface) bool {
	if r == nil {
		return false
	}
	if len(r.Surfaces) == 0 {
		return true
	}
	for _, x := range r.Surfaces {
		if strings.EqualFold(x, string(s)) {
			return true
		}
	}
	return false
}

// BaseBranch returns Base or its default, "main".
func (r *Repo) BaseBranch() string {
	if r == nil || r.Base == "" {
		return "main"
	}
	return r.Base
}

// TestCommand returns Test or its default, go test ./... .
func (r *Repo) TestCommand() []string {
	if r == nil || len(r.Test) == 0 {
		return []string{"go", "test", "./..."}
	}
	return r.Test
}

// Validate checks the section; errors name the field under prefix.
func (r *Repo) Validate(prefix string) error {
	var errs []error
	field := func(f string) string { return prefix + "." + f }
	if strings.TrimSpace(r.URL) == "" {
		errs = append(errs, fmt.Errorf("%s: required (a git URL or a local repository path)", field("url")))
	}
	if strings.ContainsAny(r.Base, " ~^:?*[\\") || strings.HasPrefix(r.Base, "-") || strings.Contains(r.Base, "..") {
		errs = append(errs, fmt.Errorf("%s: %q is not a valid branch name", field("base"), r.Base))
	}
	if (r.FuzzPackage == "") != (r.FuzzTarget == "") {
		errs = append(errs, fmt.Errorf("%s: fuzz_package and fuzz_target go together", prefix))
	}
	if r.FuzzTarget != "" && !strings.HasPrefix(r.FuzzTarget, "Fuzz") {
		errs = append(errs, fmt.Errorf("%s: %q is not a Go fuzz target (FuzzXxx)", field("fuzz_target"), r.FuzzTarget))
	}
	if len(r.Build) > 0 {
		has := false
		for _, a := range r.Build {
			has = has || strings.Contains(a, "{out}")
		}
		if !has {
			errs = append(errs, fmt.Errorf("%s: no argument holds {out} (the binary the build writes)", field("build")))
		}
	}
	if r.Harness != "" {
		switch {
		case len(r.Build) == 0:
			errs = append(errs, fmt.Errorf("%s: needs %s (the command that links it)", field("harness"), field("build")))
		case filepath.IsAbs(r.Harness) || !filepath.IsLocal(r.Harness):
			errs = append(errs, fmt.Errorf("%s: %q is not a path inside the repository", field("harness"), r.Harness))
		case !slices.Contains([]string{".c", ".cc", ".cpp", ".cxx"}, filepath.Ext(r.Harness)):
			errs = append(errs, fmt.Errorf("%s: %q is not a C or C++ file (.c, .cc, .cpp, .cxx)", field("harness"), r.Harness))
		}
	}
	if r.Regression.Dir != "" || r.Regression.File != "" || len(r.Regression.Test) > 0 {
		if r.Regression.Dir == "" || r.Regression.File == "" || len(r.Regression.Test) == 0 {
			errs = append(errs, fmt.Errorf("%s: dir, file and test are all required", field("regression")))
		}
	}
	for i, s := range r.Surfaces {
		if _, err := ParseSurface(s); err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", field("surfaces"), i, err))
		}
	}
	return errors.Join(errs...)
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
	for i, a := range t.ABIs {
		switch {
		case strings.TrimSpace(a) == "":
			errs = append(errs, fmt.Errorf("%s[%d]: empty (a file or an http(s) URL)", field("abis"), i))
		case IsURL(a):
			if err := checkHTTPURL(a); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", field("abis"), i, err))
			}
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
	if t.Repo != nil {
		if err := t.Repo.Validate(field("repo")); err != nil {
			errs = append(errs, err)
		}
	}
	if t.Auth != nil {
		if err := t.Auth.Validate(field("auth")); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// IsURL reports whether a target.abis entry is a URL (it has a scheme)
// rather than a file.
func IsURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && !strings.ContainsAny(s[:i], `/\.`)
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
