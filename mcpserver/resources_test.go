package mcpserver_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/mcpserver"
	"github.com/qafleet/fleetd/trajectory"
)

// dirLibrary serves a report from files, as cmd/fleetd's does from
// <data_dir>/reports.
type dirLibrary struct{ dir string }

func (l dirLibrary) LatestReport(context.Context) ([]byte, []byte, error) {
	md, err := os.ReadFile(filepath.Join(l.dir, "latest.md"))
	if err != nil {
		return nil, nil, err
	}
	js, err := os.ReadFile(filepath.Join(l.dir, "latest.json"))
	return md, js, err
}

func (l dirLibrary) Cluster(_ context.Context, id string) ([]byte, error) {
	if id == "5c1e0a9d" {
		return []byte(`{"id":"5c1e0a9d","severity":"high"}`), nil
	}
	return nil, fmt.Errorf("cluster %s: %w", id, fs.ErrNotExist)
}

func TestResources(t *testing.T) {
	reports := t.TempDir()
	r := newRig(t, func(_ *rig, c *mcpserver.Config) { c.Library = dirLibrary{reports} })
	cs, _ := r.stdio(context.Background(), "reader")
	defer cs.Close()
	ctx := context.Background()

	read := func(uri string) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	}
	// Before triage wrote anything, the report says how to get one.
	res, err := read(mcpserver.ReportURI)
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "No health report yet") {
		t.Errorf("no report: %+v %v", res, err)
	}
	os.WriteFile(filepath.Join(reports, "latest.md"), []byte("# fleetd health report\n"), 0o600)
	os.WriteFile(filepath.Join(reports, "latest.json"), []byte(`{"schema":1}`), 0o600)
	res, err = read(mcpserver.ReportURI)
	if err != nil {
		t.Fatal(err)
	}
	type content struct{ URI, MIME, Text string }
	var got []content
	for _, c := range res.Contents {
		got = append(got, content{c.URI, c.MIMEType, c.Text})
	}
	want := []content{{mcpserver.ReportURI, "text/markdown", "# fleetd health report\n"}, {mcpserver.ReportURI, "application/json", `{"schema":1}`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report contents (-want +got):\n%s", diff)
	}
	if res, err := read("fleetd://cluster/5c1e0a9d"); err != nil || res.Contents[0].Text != `{"id":"5c1e0a9d","severity":"high"}` {
		t.Errorf("cluster: %+v %v", res, err)
	}

	// A run record by id, after a session made one.
	call(t, cs, "qa_read", map[string]any{})
	cs2, _ := r.stdio(ctx, "second")
	call(t, cs2, "qa_read", map[string]any{})
	cs2.Close()
	run := r.waitRun()
	file, _ := os.ReadFile(filepath.Join(r.dir, trajectory.RunsDir, run.RunID+".jsonl"))
	if res, err := read("fleetd://run/" + run.RunID); err != nil || res.Contents[0].Text != string(file) || res.Contents[0].MIMEType != "application/jsonl" {
		t.Errorf("run record: %v, text equal to the file: %v", err, err == nil && res.Contents[0].Text == string(file))
	}
	res, err = read(mcpserver.RunsURI)
	if err != nil || !strings.Contains(res.Contents[0].Text, `"run_id": "`+run.RunID+`"`) || !strings.Contains(res.Contents[0].Text, `"outcome": "done"`) {
		t.Errorf("runs list: %v %v", res, err)
	}

	// Anything else is not found: unknown ids, other schemes, path tricks.
	for _, uri := range []string{"fleetd://cluster/ffffffff", "fleetd://run/r-nope", "fleetd://run/../../etc/passwd",
		"fleetd://run/..%2f..%2fkeys", "file:///etc/passwd", "fleetd://cluster/XYZ", "fleetd://report/latest/"} {
		if res, err := read(uri); err == nil {
			t.Errorf("%s: read %+v, want not found", uri, res)
		}
	}

	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
		if r.Name == "report-latest" && !strings.Contains(r.Description, "untrusted") {
			t.Errorf("the report's description does not warn that its text is untrusted: %q", r.Description)
		}
	}
	if diff := cmp.Diff([]string{mcpserver.ReportURI, mcpserver.RunsURI}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 2 {
		t.Errorf("templates: %+v %v", tmpl, err)
	}
}

func TestPrompts(t *testing.T) {
	r := newRig(t)
	cs, _ := r.stdio(context.Background(), "prompter")
	defer cs.Close()
	ctx := context.Background()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "security" || list.Prompts[0].Description != "Act as fleetd's security specialist: Probe trust boundaries." {
		t.Fatalf("prompts: %+v %v", list, err)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "security"})
	if err != nil {
		t.Fatal(err)
	}
	text := got.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"Act as fleetd's security specialist", "Goal: Probe trust boundaries.", "Look for secrets.",
		"- qa_read (observe): qa_read does a thing", "- qa_fetch: not offered by this server", `"refused: needs dial R, dial is D"`, mcpserver.ReportURI} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nobody"}); err == nil {
		t.Error("an unknown prompt was served")
	}
}

func TestParseURI(t *testing.T) {
	tests := []struct {
		uri  string
		want mcpserver.ResourceRef
		err  string
	}{
		{"fleetd://report/latest", mcpserver.ResourceRef{Kind: "report"}, ""},
		{"fleetd://runs", mcpserver.ResourceRef{Kind: "runs"}, ""},
		{"fleetd://cluster/5c1e0a9d", mcpserver.ResourceRef{Kind: "cluster", ID: "5c1e0a9d"}, ""},
		{"fleetd://run/r-20261122-041200-a1b2c3", mcpserver.ResourceRef{Kind: "run", ID: "r-20261122-041200-a1b2c3"}, ""},
		{"fleetd://cluster/5C1E", mcpserver.ResourceRef{}, "a cluster id is 4-64 lowercase hex digits"},
		{"fleetd://cluster/", mcpserver.ResourceRef{}, "a cluster id is 4-64 lowercase hex digits"},
		{"fleetd://run/../x", mcpserver.ResourceRef{}, "a run id is 1-128 of [A-Za-z0-9._-]"},
		{"fleetd://run/a/b", mcpserver.ResourceRef{}, "a run id is 1-128 of [A-Za-z0-9._-]"},
		{"fleetd://run/" + strings.Repeat("a", 129), mcpserver.ResourceRef{}, "a run id is 1-128"},
		{"fleetd://report", mcpserver.ResourceRef{}, "not a fleetd resource"},
		{"https://example.com", mcpserver.ResourceRef{}, "not a fleetd resource"},
	}
	for _, tt := range tests {
		got, err := mcpserver.ParseURI(tt.uri)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.uri, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one saying %q", tt.uri, err, tt.err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.uri, diff)
		}
	}
}

// FuzzParseURI: resource URIs come from any client. ParseURI never panics,
// and an id it accepts can never leave its directory or carry a separator.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"fleetd://report/latest", "fleetd://runs", "fleetd://cluster/5c1e0a9d", "fleetd://run/r-1",
		"fleetd://run/..", "fleetd://run/.hidden", "fleetd://run/a%2fb", "fleetd://cluster/\x00", "fleetd://run/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		ref, err := mcpserver.ParseURI(uri)
		if err != nil {
			if ref != (mcpserver.ResourceRef{}) {
				t.Fatalf("%q: error %v with a ref %+v", uri, err, ref)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("%q: error of %d bytes", uri, len(err.Error()))
			}
			return
		}
		if strings.ContainsAny(ref.ID, "/\\\x00%") || strings.HasPrefix(ref.ID, ".") || filepath.Base(ref.ID) != ref.ID && ref.ID != "" {
			t.Fatalf("%q: accepted id %q could name another path", uri, ref.ID)
		}
	})
}
