package sarif_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sarif"
)

// FuzzBuild: whatever a cluster's title, repro and entry text hold (they
// come from the permissionless log), the log renders, validates against
// the official schema, keeps one result carrying the cluster id, and a
// file location is a relative path inside the repository.
func FuzzBuild(f *testing.F) {
	f.Add("Reflected XSS (CWE-79): parameter \"q\" of http://127.0.0.1:1/x", "qa_fetch", `{"url":"http://127.0.0.1:1/x?q=%3C"}`, "")
	f.Add("Compiler crash: boom", "qa_compile", `{"source":"enum E {}"}`, crashText)
	f.Add("[x](1) \x1b[31m\u202e http://user:pw@evil/", "qa_call", `{"target":"alice","message":"hi"}`, "at ../../x.go:3 and /a/repo/b.c:0 and /a/repo/c.rs:99999999")
	f.Add("", "", "not json", "\xff\xfe")
	sch := MustSchema(f)
	f.Fuzz(func(t *testing.T, title, tool, args, text string) {
		c := fleet.Cluster{Rank: 1, ID: "0123456789abcdef", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceFace, Title: title,
			State: fleet.ClusterOpen, Trusted: true, Count: 1, Runs: 1, Sources: []string{title}, Entries: []uint64{0}}
		if tool != "" {
			c.Repro = &fleet.Repro{Tool: tool, Args: json.RawMessage(args)}
		}
		r := fleet.Report{Schema: 1, GeneratedAt: time.Unix(0, 0), Clusters: []fleet.Cluster{c}}
		var buf bytes.Buffer
		if err := sarif.Render(&buf, r, sarif.Options{Repo: true, RepoURL: args, Text: func(fleet.Cluster) string { return text }}); err != nil {
			t.Fatal(err)
		}
		validate(t, sch, buf.Bytes())
		log := sarif.Build(r, sarif.Options{Repo: true, Text: func(fleet.Cluster) string { return text }})
		res := log.Runs[0].Results
		if len(res) != 1 || res[0].PartialFingerprints[sarif.FingerprintKey] != c.ID {
			t.Fatalf("results %+v", res)
		}
		if p := res[0].Locations[0].PhysicalLocation; p.Region != nil {
			u := p.ArtifactLocation.URI
			if strings.HasPrefix(u, "/") || strings.Contains(u, "..") || p.Region.StartLine < 1 {
				t.Fatalf("file location %q line %d", u, p.Region.StartLine)
			}
		}
	})
}
