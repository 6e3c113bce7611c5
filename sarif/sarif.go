// Package sarif writes fleetd's ranked health report (a fleet.Report) as a
// SARIF 2.1.0 log, the format code hosts and CI read (GitHub code scanning
// ingests it and dedupes alerts by their partial fingerprints).
//
// One result per cluster: the rule is the cluster's class (a CWE where the
// finding names one or its kind is a known weakness, else
// fleetd/<surface>[/<kind>]), the level comes from the severity, the
// message carries the title and the repro, the locations are the URL or
// surface it is about (and file:line in target.repo when the crash text
// names one), and partialFingerprints carries the cluster id, so uploading
// the same report again updates the same alerts instead of adding new
// ones. The output is a pure function of the report and the options: the
// same report gives the same bytes.
//
// Text from the log is untrusted; it is cleaned of control and
// format characters and SARIF's message-link brackets are escaped, and a
// cluster only untrusted senders reported is never above level note.
package sarif

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// SchemaURI is the official SARIF 2.1.0 schema (OASIS, errata 01) that
// every log names and that the tests validate against.
const SchemaURI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

// FingerprintKey is the partialFingerprints key holding fleetd's cluster id
// (the fingerprint of the cluster's first finding, fleet.Fingerprint).
const FingerprintKey = "fleetdCluster/v1"

// SourceRoot is the uriBaseId of file locations: the root of target.repo.
const SourceRoot = "SRCROOT"

// SurfaceRoot is the uriBaseId of a location that is neither a file nor a
// URL: the surface's name stands as the artifact, because code scanning
// refuses a result whose physical location has no URI.
const SurfaceRoot = "FLEETD_SURFACE"

// Options are what the report alone does not say.
type Options struct {
	// ToolVersion is fleetd's version, for tool.driver.version ("" omits it).
	ToolVersion string
	// Repo is true when the target has a repository (target.repo): only
	// then are file:line locations read from the crash text.
	Repo bool
	// RepoURL is target.repo's URL; an http(s) URL becomes the run's
	// versionControlProvenance. Optional.
	RepoURL string
	// Text returns the full text of a cluster's first counted entry (the
	// crash output is past the title), or "" when it is not known; nil
	// means only titles are read.
	Text func(fleet.Cluster) string
	// Baseline returns a cluster's baselineState against an earlier run
	// ("new", "unchanged", "updated" or "absent"; "" omits it): fleetd
	// check says which findings the log already knew. nil omits it.
	Baseline func(fleet.Cluster) string
}

// Render writes r as an indented SARIF 2.1.0 log.
func Render(w io.Writer, r fleet.Report, opt Options) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Build(r, opt)); err != nil {
		return fmt.Errorf("render sarif: %w", err)
	}
	return nil
}

// Build returns the SARIF log of r: one run, one result per cluster in the
// report's order, the rules they reference sorted by id.
func Build(r fleet.Report, opt Options) Log {
	run := Run{
		Tool: Tool{Driver: Driver{
			Name:           "fleetd",
			Version:        opt.ToolVersion,
			InformationURI: "https://github.com/qafleet/fleetd",
		}},
		Results: []Result{},
		Properties: map[string]any{
			"generated_at": r.GeneratedAt.UTC(),
			"head":         r.Head,
		},
	}
	if r.Block != 0 {
		run.Properties["block"] = r.Block
		run.Properties["block_hash"] = r.BlockHash
	}
	if u, err := url.Parse(opt.RepoURL); opt.Repo && err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		run.VersionControlProvenance = []VersionControl{{RepositoryURI: u.String()}}
	}
	run.OriginalURIBaseIDs = map[string]ArtifactLocation{SurfaceRoot: {Description: &Message{Text: "the platform's surfaces, for findings about no file or URL"}}}
	if opt.Repo {
		run.OriginalURIBaseIDs[SourceRoot] = ArtifactLocation{Description: &Message{Text: "the root of target.repo"}}
	}
	rules := map[string]*Rule{}
	for _, c := range r.Clusters {
		cl := classify(c)
		rule, ok := rules[cl.id]
		if !ok {
			rule = newRule(cl)
			rules[cl.id] = rule
		}
		if s := securitySeverity(c); cl.cwe != "" && c.Trusted && c.State.Active() && s > rule.maxSeverity {
			rule.maxSeverity = s
		}
		run.Results = append(run.Results, result(c, cl.id, opt))
	}
	ids := make([]string, 0, len(rules))
	for id := range rules {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		rule := rules[id]
		if rule.maxSeverity > 0 {
			rule.Properties["security-severity"] = strconv.FormatFloat(rule.maxSeverity, 'f', 1, 64)
		}
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, *rule)
		index[id] = i
	}
	for i := range run.Results {
		run.Results[i].RuleIndex = index[run.Results[i].RuleID]
	}
	return Log{Schema: SchemaURI, Version: "2.1.0", Runs: []Run{run}}
}

// Level returns the SARIF level of a severity: critical and high are
// errors, medium a warning, everything else a note.
func Level(s fleet.Severity) string {
	switch s {
	case fleet.SeverityCritical, fleet.SeverityHigh:
		return "error"
	case fleet.SeverityMedium:
		return "warning"
	}
	return "note"
}

func result(c fleet.Cluster, rule string, opt Options) Result {
	res := Result{
		RuleID:  rule,
		Kind:    "fail",
		Level:   Level(c.Severity),
		Message: Message{Text: message(c)},
		PartialFingerprints: map[string]string{
			FingerprintKey: c.ID,
		},
		Properties: map[string]any{
			"rank":     c.Rank,
			"score":    c.Score,
			"severity": c.Severity,
			"state":    c.State,
			"trusted":  c.Trusted,
			"count":    c.Count,
			"runs":     c.Runs,
			"sources":  cleanAll(c.Sources),
			"entries":  c.Entries,
		},
	}
	if !c.Trusted && res.Level != "note" {
		res.Level = "note" // anyone can write any severity to the log
	}
	if c.Repro != nil {
		res.Properties["repro"] = map[string]any{"tool": clean(c.Repro.Tool, 64), "args": clean(string(c.Repro.Args), 4000)}
	}
	if c.PR != nil {
		res.Properties["pr"] = c.PR
	}
	if c.Cause != nil {
		// The fix stage's bisection: the commit that introduced it. A
		// property, since SARIF has no field for a result's origin commit
		// (versionControlProvenance is the analysed revision, per run).
		cause := map[string]any{"entry": c.Cause.Entry, "text": clean(c.Cause.Line(), 400)}
		if c.Cause.Commit != "" {
			cause["commit"] = c.Cause.Commit
			if c.Cause.Subject != "" {
				cause["subject"] = clean(c.Cause.Subject, fleet.MaxCauseSubject)
			}
			if !c.Cause.Date.IsZero() {
				cause["date"] = c.Cause.Date.UTC().Format(time.RFC3339)
			}
		} else {
			cause["presentSinceOldest"] = c.Cause.Since
		}
		if c.Cause.Span > 0 {
			cause["span"] = c.Cause.Span
		}
		res.Properties["cause"] = cause
	}
	if len(c.Places) > 0 {
		places := make([]map[string]any, len(c.Places))
		for i, p := range c.Places {
			places[i] = map[string]any{"place": clean(p.Place, 300), "cluster": p.Cluster, "count": p.Count}
		}
		res.Properties["places"] = places
	}
	switch c.State {
	case fleet.ClusterResolved:
		// Fixed: the rule was evaluated and the problem is gone.
		res.Kind, res.Level = "pass", "none"
	case fleet.ClusterFalsePositive:
		just := "marked a false positive on the fleetd log"
		if c.Correction != nil {
			just += fmt.Sprintf(" (entry %d)", *c.Correction)
		}
		res.Suppressions = []Suppression{{Kind: "external", Status: "accepted", Justification: just}}
	case fleet.ClusterAcceptedRisk:
		// An accepted risk is dismissed until its expiry (the state is
		// open again after it, and the result unsuppressed).
		res.Suppressions = []Suppression{{Kind: "external", Status: "accepted", Justification: clean(c.StateReason, 500)}}
	}
	var text string
	if opt.Text != nil {
		text = opt.Text(c)
	}
	res.Locations = []Location{location(c, text, opt.Repo)}
	if opt.Baseline != nil {
		res.BaselineState = opt.Baseline(c)
	}
	return res
}

// message is the title and the repro, as plain text.
func message(c fleet.Cluster) string {
	var b strings.Builder
	if !c.Trusted {
		b.WriteString("[untrusted sender] ")
	}
	b.WriteString(escapeBrackets(clean(c.Title, 400)))
	if c.Repro != nil {
		b.WriteString(" Repro: ")
		b.WriteString(escapeBrackets(clean(c.Repro.Tool+" "+string(c.Repro.Args), 1000)))
	}
	fmt.Fprintf(&b, " (fleetd cluster %s, %s, seen %d times)", c.ID, c.State, c.Count)
	return b.String()
}

// location is where the cluster is: a file and line in target.repo when
// the crash text names one, else the URL it is about, else its surface
// (below SurfaceRoot); the surface is always the logical location.
func location(c fleet.Cluster, text string, repo bool) Location {
	surface := string(c.Surface)
	if surface == "" {
		surface = "free-form"
	}
	loc := Location{LogicalLocations: []LogicalLocation{{Name: surface, Kind: "module", FullyQualifiedName: "fleetd/surface/" + surface}}}
	if repo {
		for _, s := range []string{text, c.Title} {
			if file, line, ok := SourceLine(s); ok {
				loc.PhysicalLocation = &PhysicalLocation{
					ArtifactLocation: ArtifactLocation{URI: file, URIBaseID: SourceRoot},
					Region:           &Region{StartLine: line},
				}
				return loc
			}
		}
	}
	if u := targetURL(c, text); u != "" {
		loc.PhysicalLocation = &PhysicalLocation{ArtifactLocation: ArtifactLocation{URI: u}}
	} else {
		loc.PhysicalLocation = &PhysicalLocation{ArtifactLocation: ArtifactLocation{URI: url.PathEscape(surface), URIBaseID: SurfaceRoot}}
	}
	return loc
}

// targetURL is the http(s) URL the cluster is about: its repro's "url"
// argument, else the first URL in its title or text.
func targetURL(c fleet.Cluster, text string) string {
	if c.Repro != nil {
		var args struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(c.Repro.Args, &args) == nil {
			if u := cleanURL(args.URL); u != "" {
				return u
			}
		}
	}
	for _, s := range []string{c.Title, text} {
		if m := urlRE.FindString(s); m != "" {
			if u := cleanURL(strings.TrimRight(m, ".,;:)\"'")); u != "" {
				return u
			}
		}
	}
	return ""
}

var urlRE = regexp.MustCompile(`https?://[^\s"'<>()\[\]{}|\\^` + "`" + `]+`)

// cleanURL returns u re-encoded when it is an absolute http(s) URL, else "".
func cleanURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || len(u) > 2000 {
		return ""
	}
	p.User = nil // never repeat credentials a finding may quote
	return p.String()
}

// sourceRE matches a source file and line as crash output prints them: a
// path ending in a source file's extension, a colon and the line (and
// perhaps a column). An absolute path counts only inside the repository's
// checkout (a ".../repo/" directory, where qa_fuzz copies target.repo):
// the rest are the toolchain's files.
var sourceRE = regexp.MustCompile(`(?:^|[\s("'=])((?:/[^\s:"'()]*?/repo/)?)((?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.(?:go|c|cc|cpp|cxx|h|hh|hpp|rs|py|java|js|ts|sol|zig)):([0-9]{1,7})\b`)

// SourceLine returns the first file:line in s that belongs to target.repo:
// a relative path, or an absolute one below a checkout's repo/ directory
// (made relative to it). Paths with .. or below a Go module cache or
// GOROOT are skipped.
func SourceLine(s string) (file string, line int, ok bool) {
	for _, m := range sourceRE.FindAllStringSubmatchIndex(s, 32) {
		prefix, path := s[m[2]:m[3]], s[m[4]:m[5]]
		start := m[4]
		if start > 0 && s[start-1] == '/' && prefix == "" {
			continue // the tail of an absolute path outside a checkout
		}
		if strings.Contains(path, "..") || strings.HasPrefix(path, "pkg/mod/") || strings.Contains(prefix, "/pkg/mod/") {
			continue
		}
		n, err := strconv.Atoi(s[m[6]:m[7]])
		if err != nil || n < 1 {
			continue
		}
		return path, n, true
	}
	return "", 0, false
}

// Log is a SARIF log (only the parts fleetd writes).
type Log struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []Run  `json:"runs"`
}

// Run is one run of a tool.
type Run struct {
	Tool                     Tool                        `json:"tool"`
	OriginalURIBaseIDs       map[string]ArtifactLocation `json:"originalUriBaseIds,omitempty"`
	VersionControlProvenance []VersionControl            `json:"versionControlProvenance,omitempty"`
	Results                  []Result                    `json:"results"`
	Properties               map[string]any              `json:"properties,omitempty"`
}

// Tool names the producer.
type Tool struct {
	Driver Driver `json:"driver"`
}

// Driver is the tool component that produced the results.
type Driver struct {
	Name           string `json:"name"`
	Version        string `json:"version,omitempty"`
	InformationURI string `json:"informationUri,omitempty"`
	Rules          []Rule `json:"rules,omitempty"`
}

// Rule is a reportingDescriptor: one class of finding.
type Rule struct {
	ID               string         `json:"id"`
	Name             string         `json:"name,omitempty"`
	ShortDescription *Message       `json:"shortDescription,omitempty"`
	HelpURI          string         `json:"helpUri,omitempty"`
	Properties       map[string]any `json:"properties,omitempty"`
	maxSeverity      float64
}

// Result is one cluster.
type Result struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Kind                string            `json:"kind"`
	Level               string            `json:"level"`
	Message             Message           `json:"message"`
	Locations           []Location        `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Suppressions        []Suppression     `json:"suppressions,omitempty"`
	BaselineState       string            `json:"baselineState,omitempty"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

// Message is plain text.
type Message struct {
	Text string `json:"text"`
}

// Location is where a result is.
type Location struct {
	PhysicalLocation *PhysicalLocation `json:"physicalLocation,omitempty"`
	LogicalLocations []LogicalLocation `json:"logicalLocations,omitempty"`
}

// PhysicalLocation is an artifact and perhaps a region of it.
type PhysicalLocation struct {
	ArtifactLocation ArtifactLocation `json:"artifactLocation"`
	Region           *Region          `json:"region,omitempty"`
}

// ArtifactLocation is a URI, relative to URIBaseID when that is set.
type ArtifactLocation struct {
	URI         string   `json:"uri,omitempty"`
	URIBaseID   string   `json:"uriBaseId,omitempty"`
	Description *Message `json:"description,omitempty"`
}

// Region is a line of a file.
type Region struct {
	StartLine int `json:"startLine"`
}

// LogicalLocation is a named part of the platform: the surface.
type LogicalLocation struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName,omitempty"`
	Kind               string `json:"kind,omitempty"`
}

// Suppression records a dismissal (a false positive marked on the log).
type Suppression struct {
	Kind          string `json:"kind"`
	Status        string `json:"status,omitempty"`
	Justification string `json:"justification,omitempty"`
}

// VersionControl names the repository the file locations are in.
type VersionControl struct {
	RepositoryURI string `json:"repositoryUri"`
}

// clean makes untrusted text one safe line (fleet.PlainText): invalid
// UTF-8 replaced, control and format characters (bidirectional overrides
// included) dropped, whitespace runs one space, at most limit runes.
func clean(s string, limit int) string { return fleet.PlainText(s, limit) }

func cleanAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clean(s, 80)
	}
	return out
}

// escapeBrackets escapes [ and ], which SARIF messages read as links to
// related locations (§3.11.6).
func escapeBrackets(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`).Replace(s)
}
