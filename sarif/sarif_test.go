package sarif_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sarif"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaFile is the official SARIF 2.1.0 schema, OASIS errata 01, copied
// byte for byte from github.com/oasis-tcs/sarif-spec at commit
// a560296ca8c921f3bdb8d4a8db57ab83dae968a7, path
// sarif-2.1/schema/sarif-schema-2.1.0.json (sha256 c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e).
const schemaFile = "testdata/sarif-schema-2.1.0.json"

// MustSchema compiles the official schema, formats asserted.
func MustSchema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(sarif.SchemaURI, doc); err != nil {
		tb.Fatal(err)
	}
	sch, err := c.Compile(sarif.SchemaURI)
	if err != nil {
		tb.Fatal(err)
	}
	return sch
}

func validate(tb testing.TB, sch *jsonschema.Schema, b []byte) {
	tb.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		tb.Fatalf("not valid SARIF 2.1.0: %v\n%s", err, b)
	}
}

func u64(v uint64) *uint64 { return &v }

// sampleReport has one cluster of each shape the renderer tells apart.
func sampleReport() fleet.Report {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	return fleet.Report{
		Schema: 1, GeneratedAt: at, Head: 40, Block: 77, BlockHash: "0xabc",
		Clusters: []fleet.Cluster{
			{Rank: 1, ID: "00000000000000a1", Score: 9.1, Severity: fleet.SeverityHigh, Surface: "face", State: fleet.ClusterOpen, Trusted: true,
				Title: `Reflected XSS (CWE-79): parameter "q" of http://127.0.0.1:8080/search is written into the page unescaped`,
				Count: 3, Runs: 2, Sources: []string{"qa-security"}, Entries: []uint64{3, 9},
				Repro: &fleet.Repro{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"http://127.0.0.1:8080/search?q=%3Cx%3E"}`)}},
			{Rank: 2, ID: "00000000000000a2", Score: 8, Severity: fleet.SeverityCritical, Surface: fleet.SurfaceCompiler, State: fleet.ClusterRegressed, Trusted: true,
				Title: `Compiler crash: "panic: runtime error: index out of range [N] with length N @ compiler.(*compiler).enum", on a 12-byte input`,
				Count: 1, Runs: 1, Sources: []string{"qa-fuzz"}, Entries: []uint64{5},
				Repro: &fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"enum {"}`)},
				Cause: &fleet.Cause{Entry: 12, Commit: "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49", Subject: "simplify enum lowering\u202e", Date: at.Add(-72 * time.Hour), Span: 12}},
			{Rank: 3, ID: "00000000000000a3", Score: 4, Severity: fleet.SeverityMedium, Surface: fleet.SurfaceDocs, State: fleet.ClusterOpen, Trusted: true,
				Title: "The docs promise GET http://127.0.0.1:8080/api/v1/names (llms.txt), but it answers 404.", Count: 1, Runs: 1, Entries: []uint64{6}},
			{Rank: 4, ID: "00000000000000a4", Score: 3, Severity: fleet.SeverityCritical, Surface: "chain", State: fleet.ClusterOpen, Trusted: false,
				Title: "[click](1) everything is \x1b[31mbroken\u202e", Count: 1, Runs: 1, Sources: []string{"0x00000000000000000000000000000000000000aa"}, Entries: []uint64{7}},
			{Rank: 5, ID: "00000000000000a5", Score: 1, Severity: fleet.SeverityHigh, Surface: "perf", State: fleet.ClusterResolved, Trusted: true,
				Title: "Latency of /api is over the SLO", Count: 2, Runs: 2, Entries: []uint64{1, 2}, Correction: u64(8), PR: &fleet.PRLink{Number: 4, State: "merged", URL: "https://example.invalid/pr/4", Verified: true},
				Places: []fleet.Place{{Place: "alice", Cluster: "00000000000000a5", Count: 1, LastSeen: time.Unix(0, 0)}, {Place: "bob", Cluster: "00000000000000b5", Count: 1, LastSeen: time.Unix(0, 0)}}},
			{Rank: 6, ID: "00000000000000a6", Cause: &fleet.Cause{Entry: 13, Since: "9b0c8d7e", Span: 64}, Score: 1, Severity: fleet.SeverityLow, Surface: "headers", State: fleet.ClusterFalsePositive, Trusted: true,
				Title: "HTML pages on 127.0.0.1 lack security headers: CSP", Count: 1, Runs: 1, Entries: []uint64{4}, Correction: u64(10)},
			{Rank: 7, ID: "00000000000000a7", Score: 0.5, Severity: fleet.SeverityUnknown, State: fleet.ClusterOpen, Trusted: true, FreeForm: true,
				Title: "something odd happened", Count: 1, Runs: 1, Entries: []uint64{11}},
		},
	}
}

// crashText is the full text of the compiler crash's entry: its output
// names a file of the repository (in qa_fuzz's checkout) below a frame of
// the runtime's.
const crashText = `Compiler crash: "panic: ..." stderr: "goroutine 1 [running]:
runtime.goPanicIndex(...)
	/usr/local/go/src/runtime/panic.go:115
compiler.(*compiler).enum(...)
	/tmp/jail/fuzz/fuzz-go-123/repo/compiler/enum.go:42 +0x1d"`

func render(tb testing.TB, r fleet.Report, opt sarif.Options) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := sarif.Render(&buf, r, opt); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func opts() sarif.Options {
	return sarif.Options{ToolVersion: "v1.2.3", Repo: true, RepoURL: "https://git.example.invalid/acme/compiler.git",
		Text: func(c fleet.Cluster) string {
			if c.ID == "00000000000000a2" {
				return crashText
			}
			return ""
		}}
}

func TestSARIFValidatesAgainstTheOfficialSchema(t *testing.T) {
	sch := MustSchema(t)
	for name, r := range map[string]fleet.Report{
		"sample": sampleReport(),
		"empty":  {Schema: 1, GeneratedAt: time.Unix(0, 0)},
	} {
		t.Run(name, func(t *testing.T) {
			validate(t, sch, render(t, r, opts()))
			validate(t, sch, render(t, r, sarif.Options{}))
			o := opts()
			o.Baseline = func(c fleet.Cluster) string {
				if c.Rank == 1 {
					return "new"
				}
				return "unchanged"
			}
			validate(t, sch, render(t, r, o))
		})
	}
}

// TestSchemaRejectsBrokenSARIF proves the validation can fail: a log
// without its version, and a result with a level SARIF does not define.
func TestSchemaRejectsBrokenSARIF(t *testing.T) {
	sch := MustSchema(t)
	good := render(t, sampleReport(), opts())
	for name, edit := range map[string]func(map[string]any){
		"no version": func(m map[string]any) { delete(m, "version") },
		"bad level": func(m map[string]any) {
			m["runs"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)["level"] = "fatal"
		},
		"bad uri": func(m map[string]any) {
			m["runs"].([]any)[0].(map[string]any)["versionControlProvenance"].([]any)[0].(map[string]any)["repositoryUri"] = "not a uri"
		},
	} {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ := json.Marshal(m)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(inst) == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}

func TestSARIFOneResultPerClusterWithRulesLevelsAndLocations(t *testing.T) {
	r := sampleReport()
	log := sarif.Build(r, opts())
	if len(log.Runs) != 1 {
		t.Fatalf("runs: %d", len(log.Runs))
	}
	run := log.Runs[0]
	if len(run.Results) != len(r.Clusters) {
		t.Fatalf("%d results for %d clusters", len(run.Results), len(r.Clusters))
	}
	type row struct {
		Rule, Kind, Level, FP, URI, Base string
		Line                             int
		Logical                          string
		Suppressed                       bool
	}
	var got []row
	for i, res := range run.Results {
		if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %d: ruleIndex %d is %s, not %s", i, res.RuleIndex, run.Tool.Driver.Rules[res.RuleIndex].ID, res.RuleID)
		}
		x := row{Rule: res.RuleID, Kind: res.Kind, Level: res.Level, FP: res.PartialFingerprints[sarif.FingerprintKey], Suppressed: len(res.Suppressions) > 0}
		loc := res.Locations[0]
		if p := loc.PhysicalLocation; p != nil {
			x.URI, x.Base = p.ArtifactLocation.URI, p.ArtifactLocation.URIBaseID
			if p.Region != nil {
				x.Line = p.Region.StartLine
			}
		}
		if loc.PhysicalLocation == nil || loc.PhysicalLocation.ArtifactLocation.URI == "" {
			t.Errorf("result %d has no physical location URI: code scanning refuses it", i)
		}
		x.Logical = loc.LogicalLocations[0].Name
		got = append(got, x)
	}
	want := []row{
		{Rule: "CWE-79", Kind: "fail", Level: "error", FP: "00000000000000a1", URI: "http://127.0.0.1:8080/search?q=%3Cx%3E", Logical: "face"},
		{Rule: "fleetd/compiler/crash", Kind: "fail", Level: "error", FP: "00000000000000a2", URI: "compiler/enum.go", Base: sarif.SourceRoot, Line: 42, Logical: "compiler"},
		{Rule: "fleetd/docs/docs-contract", Kind: "fail", Level: "warning", FP: "00000000000000a3", URI: "http://127.0.0.1:8080/api/v1/names", Logical: "docs"},
		{Rule: "fleetd/chain", Kind: "fail", Level: "note", FP: "00000000000000a4", URI: "chain", Base: sarif.SurfaceRoot, Logical: "chain"},
		{Rule: "fleetd/perf/latency", Kind: "pass", Level: "none", FP: "00000000000000a5", URI: "perf", Base: sarif.SurfaceRoot, Logical: "perf"},
		{Rule: "CWE-693", Kind: "fail", Level: "note", FP: "00000000000000a6", URI: "headers", Base: sarif.SurfaceRoot, Logical: "headers", Suppressed: true},
		{Rule: "fleetd/free-form", Kind: "fail", Level: "note", FP: "00000000000000a7", URI: "free-form", Base: sarif.SurfaceRoot, Logical: "free-form"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-want +got):\n%s", d)
	}
	var ids []string
	for _, rule := range run.Tool.Driver.Rules {
		ids = append(ids, rule.ID)
	}
	if d := cmp.Diff([]string{"CWE-693", "CWE-79", "fleetd/chain", "fleetd/compiler/crash", "fleetd/docs/docs-contract", "fleetd/free-form", "fleetd/perf/latency"}, ids); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
	xss := run.Tool.Driver.Rules[1]
	if xss.HelpURI != "https://cwe.mitre.org/data/definitions/79.html" || xss.Properties["security-severity"] != "8.0" {
		t.Errorf("CWE-79 rule: %+v", xss)
	}
	if tags := xss.Properties["tags"].([]string); !strings.Contains(strings.Join(tags, ","), "external/cwe/cwe-079") {
		t.Errorf("CWE-79 tags: %v", tags)
	}
	if _, ok := run.Tool.Driver.Rules[0].Properties["security-severity"]; ok {
		t.Errorf("a rule whose only cluster is a false positive got a security-severity: %+v", run.Tool.Driver.Rules[0])
	}
	if run.VersionControlProvenance[0].RepositoryURI != "https://git.example.invalid/acme/compiler.git" {
		t.Errorf("provenance: %+v", run.VersionControlProvenance)
	}
}

func TestSARIFMessagesCarryTheReproAndNoHostileText(t *testing.T) {
	log := sarif.Build(sampleReport(), opts())
	res := log.Runs[0].Results
	if m := res[1].Message.Text; !strings.Contains(m, `Repro: qa_compile {"source":"enum {"}`) || !strings.Contains(m, "00000000000000a2") {
		t.Errorf("crash message lacks its repro or cluster id: %s", m)
	}
	if rp := res[1].Properties["repro"].(map[string]any); rp["tool"] != "qa_compile" {
		t.Errorf("repro property: %v", rp)
	}
	hostile := res[3].Message.Text
	for _, bad := range []string{"\x1b", "\u202e", "[click]"} {
		if strings.Contains(hostile, bad) {
			t.Errorf("message keeps %q: %q", bad, hostile)
		}
	}
	if !strings.HasPrefix(hostile, `[untrusted sender] \[click\](1)`) {
		t.Errorf("untrusted message: %q", hostile)
	}
}

// TestSARIFSameReportSameFingerprints: uploading the same report twice
// gives identical logs, so code scanning matches every alert again; a
// report where the clusters moved rank keeps each cluster's fingerprint.
func TestSARIFSameReportSameFingerprints(t *testing.T) {
	a, b := render(t, sampleReport(), opts()), render(t, sampleReport(), opts())
	if !bytes.Equal(a, b) {
		t.Fatal("the same report rendered twice differs")
	}
	r := sampleReport()
	r.Clusters[0], r.Clusters[1] = r.Clusters[1], r.Clusters[0]
	r.Clusters[0].Count++
	byFP := func(l sarif.Log) map[string]string {
		m := map[string]string{}
		for _, res := range l.Runs[0].Results {
			m[res.PartialFingerprints[sarif.FingerprintKey]] = res.RuleID
		}
		return m
	}
	if d := cmp.Diff(byFP(sarif.Build(sampleReport(), opts())), byFP(sarif.Build(r, opts()))); d != "" {
		t.Errorf("fingerprints moved with the ranking (-first +second):\n%s", d)
	}
}

func TestClassOfKnownKinds(t *testing.T) {
	for title, want := range map[string]string{
		"Public URL http://127.0.0.1:1/.env (HTTP 200) exposes 1 secret(s): hex private key": "CWE-200",
		"Admin function adminBurn(string[]) does not revert when called by a fresh address":  "CWE-284",
		"CORS on 127.0.0.1:1 reflects the foreign Origin":                                    "CWE-942",
		"Spoofed identity: the call endpoint trusts a client-supplied identity header":       "CWE-290",
		"The call endpoint answers HTTP 500 and leaks internals: stack trace `panic: x`":     "CWE-209",
		"Open redirect (CWE-601): parameter \"next\" of http://x/ sends the browser away":    "CWE-601",
		"Compiler resource exhaustion (out of memory): boom":                                 "CWE-400",
		"Compiler hang: a 12-byte input does not finish":                                     "fleetd/compiler/hang",
		"The exchange rate changed": "fleetd/compiler",
	} {
		r := fleet.Report{Clusters: []fleet.Cluster{{ID: "0000000000000001", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler, State: fleet.ClusterOpen, Trusted: true, Title: title}}}
		if got := sarif.Build(r, sarif.Options{}).Runs[0].Results[0].RuleID; got != want {
			t.Errorf("%q: rule %s, want %s", title, got, want)
		}
	}
}

func TestSourceLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		file string
		line int
	}{
		{"\t/tmp/x/fuzz-go-1/repo/compiler/enum.go:42 +0x1d", "compiler/enum.go", 42},
		{"    compiler_test.go:17: crashed", "compiler_test.go", 17},
		{"/usr/local/go/src/runtime/panic.go:115\n\tsrc/parse.c:9:3: error", "src/parse.c", 9},
		{"/root/go/pkg/mod/x/y.go:3", "", 0},
		{"see ../../etc/passwd.go:1", "", 0},
		{"line 0 is no line: a.go:0", "", 0},
		{"no location at all", "", 0},
	} {
		f, l, ok := sarif.SourceLine(tc.in)
		if f != tc.file || l != tc.line || ok != (tc.file != "") {
			t.Errorf("SourceLine(%q) = %q, %d, %v; want %q, %d", tc.in, f, l, ok, tc.file, tc.line)
		}
	}
}

// TestSARIFCarriesTheCause: a cluster the fix stage bisected carries the
// first bad commit (or since when it is present) in its result's
// properties, its untrusted subject cleaned.
func TestSARIFCarriesTheCause(t *testing.T) {
	run := sarif.Build(sampleReport(), opts()).Runs[0]
	got := map[string]any{}
	for _, res := range run.Results {
		if c, ok := res.Properties["cause"]; ok {
			got[res.PartialFingerprints[sarif.FingerprintKey]] = c
		}
	}
	want := map[string]any{
		"00000000000000a2": map[string]any{"entry": uint64(12), "commit": "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49", "subject": "simplify enum lowering",
			"date": "2026-11-23T12:00:00Z", "span": 12, "text": `introduced by 3f2a9c1d0e8b "simplify enum lowering\u202e" (2026-11-23)`},
		"00000000000000a6": map[string]any{"entry": uint64(13), "presentSinceOldest": "9b0c8d7e", "span": 64, "text": "present since the oldest commit tried (9b0c8d7e, 64 commits back)"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("causes (-want +got):\n%s", d)
	}
}
