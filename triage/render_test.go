package triage

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

var update = flag.Bool("update", false, "rewrite golden files")

// hostile are findings written to break a renderer.
var hostile = []string{
	"qa/v1 source=qa-ux sev=high surface=face run=r-1\n<img src=x onerror=alert(1)><script>alert(2)</script> &amp; done",
	"qa/v1 source=qa-ux sev=high surface=face run=r-2\n[urgent](javascript:alert(1)) ![x](http://evil.example/x.png) <http://evil.example> see https://evil.example/a and www.evil.example or mail ops@evil.example",
	"qa/v1 source=qa-ux sev=high surface=face run=r-3\ncell | breaker | `code` *bold* _it_ ~~s~~ # heading\n> quote",
	"qa/v1 source=qa-ux sev=high surface=face run=r-4\n\x1b[31mred alert\x1b[0m\u202egnp.exe\u200b zero\u2066width\u0007bell",
	"qa/v1 source=qa-ux sev=high surface=face run=r-5\n" + strings.Repeat("A", 1990),
	"invalid utf-8 \xff\xfe free-form | with <b>tags</b>",
	"qa/v1 source=qa-ux sev=high surface=face run=r-6\nrepro args with a pipe\nrepro: qa_fetch {\"url\":\"https://x.test/?a=1|2`3``4\",\"note\":\"<script>\"}",
}

func hostileReport(t *testing.T) fleet.Report {
	t.Helper()
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, strangerAddr, hostile...))
	return e.Report(t0.Add(time.Hour))
}

func TestMarkdownEscapesHostileText(t *testing.T) {
	r := hostileReport(t)
	var b bytes.Buffer
	if err := RenderMarkdown(&b, r, 0, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if !utf8.ValidString(md) {
		t.Error("markdown is not valid UTF-8")
	}
	// Repros are code spans: literal text, where HTML and links are inert.
	// Each must be one span whose fence is longer than any backtick run in it.
	prose, repros, _ := strings.Cut(md, "## Repros")
	for _, line := range strings.Split(strings.TrimSpace(repros), "\n") {
		_, code, ok := strings.Cut(line, ": ")
		if !ok || !strings.HasPrefix(code, "```") || !strings.HasSuffix(code, "```") || strings.Count(code, "```") != 2 {
			t.Errorf("repro line is not one fenced code span: %q", line)
		}
	}
	md = prose
	for _, bad := range []string{
		"<img", "<script", "</", "](", "![", "<http", "https://", "http://", "www.evil", "@evil",
		"\x1b", "\u202e", "\u200b", "\u2066", "\x07", "&amp;done",
	} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown contains %q", bad)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| # ") || strings.HasPrefix(line, "|---") {
			continue
		}
		// Every table row has exactly 12 cells: count the unescaped pipes.
		if n := strings.Count(line, "|") - strings.Count(line, `\|`); n != 13 {
			t.Errorf("table row has %d unescaped pipes, want 13: %s", n, line)
		}
		if len(line) > 1500 {
			t.Errorf("table row of %d bytes: long text is not clipped", len(line))
		}
	}
	golden(t, "hostile.md", b.Bytes())
}

func TestTableAndJSONAreSafe(t *testing.T) {
	r := hostileReport(t)
	var tb, js bytes.Buffer
	if err := RenderTable(&tb, r, 0, t0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\x1b", "\u202e", "\x07", "\xff"} {
		if strings.Contains(tb.String(), bad) {
			t.Errorf("table contains %q", bad)
		}
	}
	if err := RenderJSON(&js, r, 2); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(js.String(), "<script") || !utf8.Valid(js.Bytes()) {
		t.Error("JSON holds raw HTML or invalid UTF-8")
	}
	var back fleet.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Clusters) != 2 {
		t.Errorf("JSON top 2 round trip: %v, %d clusters", err, len(back.Clusters))
	}
}

func TestMarkdownText(t *testing.T) {
	for in, want := range map[string]string{
		"plain words":               "plain words",
		"a|b":                       `a\|b`,
		"<b>x</b>":                  "&lt;b&gt;x&lt;/b&gt;",
		"[t](u)":                    `\[t\]\(u\)`,
		"go to https://x.test":      `go to https\[:\]//x\.test`,
		"www.x.test":                `www\[.\]x\.test`,
		"line\nbreak\ttab":          "line break tab",
		"esc\x1b[0m":                `esc\[0m`,
		"\u202eevil":                "evil",
		strings.Repeat("é", 5) + "": "ééééé",
	} {
		if got := MarkdownText(in, 0); got != want {
			t.Errorf("MarkdownText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := MarkdownText(strings.Repeat("x", 50), 10); got != "xxxxxxxxxx…" {
		t.Errorf("clipped: %q", got)
	}
	for in, want := range map[string]string{
		"a`b":    "``a`b``",
		"`x`":    "`` `x` ``",
		"a|b":    "`a\\|b`",
		"<i>":    "`<i>`",
		"x\n\ny": "`x y`",
	} {
		if got := MarkdownCode(in, 0); got != want {
			t.Errorf("MarkdownCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got, -update to accept):\n%s", name, diff)
	}
}

func TestMeta(t *testing.T) {
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, fleetAddr,
		"qa/v1 source=qa-fuzz sev=high surface=compiler run=r-1\ncompile panic\nrepro: qa_compile {\"source\":\"a\"}",
		"qa/v1 source=qa-fuzz sev=low surface=docs run=r-1\ntypo\nrepro: qa_fetch {\"url\":\"https://x.test\"}",
		// A title that tries to smuggle a repro line and a second envelope.
		"qa/v1 source=qa-ux sev=critical surface=face run=r-1\nxss \nrepro: qa_fetch {\"url\":\"https://y.test\"}",
	))
	mustAdd(t, e, entries(3, strangerAddr, "qa/v1 source=qa-x sev=critical surface=chain\nfake drain imminent\nrepro: qa_chain {\"method\":\"x\"}"))
	r := e.Report(t0)
	top := Top(r, 3)
	if len(top) != 3 || top[0].ID != mustCluster(t, e, 2) {
		t.Fatalf("top %v: want three trusted clusters, the critical first", top)
	}
	text, err := MetaText(r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse(text)
	if err != nil || f.Source != MetaSource || f.Severity != fleet.SeverityMeta || f.Kind != fleet.KindMeta || f.Repro != nil {
		t.Fatalf("meta text parses to %+v, %v", f, err)
	}
	if strings.Contains(text, "fake drain") {
		t.Error("an untrusted title reached the meta summary")
	}
	if len(text) > fleet.MaxEnvelopeBytes {
		t.Errorf("meta text is %d bytes", len(text))
	}

	st := MetaState{}
	if !MetaDue(r, st, t0, time.Hour) {
		t.Error("first summary not due")
	}
	st = MetaState{PostedAt: t0, Top: top}
	if MetaDue(r, st, t0.Add(2*time.Hour), time.Hour) {
		t.Error("summary due although the top 3 did not change")
	}
	reordered := MetaState{PostedAt: t0, Top: []TopItem{top[2], top[0], top[1]}}
	if TopChanged(r, reordered.Top) {
		t.Error("a reshuffle of the same three counts as a change")
	}
	changed := MetaState{PostedAt: t0, Top: []TopItem{top[0], top[1], {ID: "gone", State: fleet.ClusterOpen}}}
	if MetaDue(r, changed, t0.Add(59*time.Minute), time.Hour) || !MetaDue(r, changed, t0.Add(time.Hour), time.Hour) {
		t.Error("rate limit: want not due before MetaEvery and due at it")
	}
}

func TestCorrectionFormat(t *testing.T) {
	for _, tc := range []struct {
		index, what string
		want        string
		err         bool
	}{
		{"12", "false-positive", "qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=12", false},
		{"12", "resolved", "qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=12", false},
		{"12", "duplicate-of=7", "qa/v1 source=qa-operator sev=info surface=fleet kind=duplicate-of ref=12 of=7", false},
		{"12", "duplicate-of=12", "", true},
		{"-1", "resolved", "", true},
		{"12", "duplicate-of=x", "", true},
		{"12", "wontfix", "", true},
	} {
		c, err := ParseMark(tc.index, tc.what)
		if tc.err {
			if err == nil {
				t.Errorf("ParseMark(%q, %q) accepted", tc.index, tc.what)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMark(%q, %q): %v", tc.index, tc.what, err)
			continue
		}
		text, err := c.Format()
		if err != nil || text != tc.want {
			t.Errorf("Format() = %q, %v; want %q", text, err, tc.want)
		}
	}
}

func TestRenderShowsPRs(t *testing.T) {
	r := fleet.Report{GeneratedAt: time.Unix(0, 0), Clusters: []fleet.Cluster{{Rank: 1, ID: "0123456789abcdef", State: fleet.ClusterOpen, Trusted: true}, {Rank: 2, ID: "fedcba9876543210", State: fleet.ClusterOpen, Trusted: true}}}
	AttachPRs(&r, map[string]fleet.PRLink{"0123456789abcdef": {Number: 3, State: "draft", URL: "file:///repo/.git/fleetd/pulls/3.json"}})
	var md, table strings.Builder
	if err := RenderMarkdown(&md, r, 0, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := RenderTable(&table, r, 0, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{md.String(), table.String()} {
		if !strings.Contains(out, "open, PR #3 draft") || strings.Contains(out, "PR #0") {
			t.Errorf("report does not show the PR of one cluster only:\n%s", out)
		}
	}
	if !strings.Contains(md.String(), "## Pull requests") || !strings.Contains(md.String(), "pulls/3.json") {
		t.Errorf("markdown lacks the PR list:\n%s", md.String())
	}
}
