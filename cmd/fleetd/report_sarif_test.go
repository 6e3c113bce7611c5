package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sarif"
	"github.com/qafleet/fleetd/triage"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// mustValidSARIF validates b against the official SARIF 2.1.0 schema that
// package sarif keeps as testdata (where it came from is noted there) and
// returns the log.
func mustValidSARIF(tb testing.TB, b []byte) sarif.Log {
	tb.Helper()
	f, err := os.Open(filepath.Join("..", "..", "sarif", "testdata", "sarif-schema-2.1.0.json"))
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
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		tb.Fatalf("not valid SARIF 2.1.0: %v\n%s", err, b)
	}
	var log sarif.Log
	if err := json.Unmarshal(b, &log); err != nil {
		tb.Fatal(err)
	}
	return log
}

// TestReportFormatSARIF: `fleetd report --format sarif --out F` writes the
// saved report as valid SARIF, one result per cluster whatever --top says,
// and the same report twice gives the same file.
func TestReportFormatSARIF(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	var rows []fleet.Cluster
	for i, title := range []string{"Reflected XSS (CWE-79): parameter \"q\" of http://127.0.0.1:9/x", "Compiler crash: boom", "Dead link on http://127.0.0.1:9/: 404"} {
		rows = append(rows, fleet.Cluster{Rank: i + 1, ID: strings.Repeat(string(rune('a'+i)), 16), Score: 10 - float64(i), Severity: fleet.SeverityHigh,
			Surface: fleet.SurfaceFace, Title: title, State: fleet.ClusterOpen, Trusted: true, Count: 1, Runs: 1,
			FirstSeen: now, LastSeen: now, Entries: []uint64{uint64(i)}})
	}
	rep := fleet.Report{Schema: fleet.ReportSchema, GeneratedAt: now, Head: 3, Totals: fleet.ReportTotals{Clusters: 3, Open: 3}, Clusters: rows}
	if err := triage.WriteReport(filepath.Join(dir, "reports"), rep, 0, 0); err != nil {
		t.Fatal(err)
	}
	var files [2][]byte
	for i := range files {
		out := filepath.Join(t.TempDir(), "fleetd.sarif")
		var stdout, stderr strings.Builder
		if code := Main(context.Background(), []string{"report", "--data-dir", dir, "--format", "sarif", "--top", "1", "--out", out}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	log := mustValidSARIF(t, files[0])
	if n := len(log.Runs[0].Results); n != 3 {
		t.Fatalf("%d results for 3 clusters", n)
	}
	for i, res := range log.Runs[0].Results {
		if res.PartialFingerprints[sarif.FingerprintKey] != rows[i].ID {
			t.Errorf("result %d: fingerprint %v, want %s", i, res.PartialFingerprints, rows[i].ID)
		}
	}
	if got := log.Runs[0].Results[0].RuleID; got != "CWE-79" {
		t.Errorf("rule %s", got)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("the same report gave two different SARIF files")
	}
}
