package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestUnsafeMarkupCatchesCode(t *testing.T) {
	for _, page := range []string{xss, `<a href=" javascript:x">`, `<p style="x">`, `<script>alert(1)</script>`, `<svg onload=alert(1)>`} {
		if bad, _ := unsafeMarkup(page); len(bad) == 0 {
			t.Errorf("%q passed the markup check", page)
		}
	}
	if bad, text := unsafeMarkup(`<p>&lt;img src=x onerror=alert(1)&gt;</p><script src="/static/console.js"></script>`); len(bad) > 0 || text != xss {
		t.Errorf("escaped text flagged: %v %q", bad, text)
	}
}

func TestRenderReportFile(t *testing.T) {
	f := newFixture(t)
	rep, err := f.c.reports.Latest()
	if err != nil {
		t.Fatal(err)
	}
	hist, err := NewReports(filepath.Join(f.dir, "reports")).History()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := RenderReport(&buf, rep, hist, 0, time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	bad, text := unsafeMarkup(out)
	if len(bad) > 0 {
		t.Errorf("report file: %v", bad)
	}
	if !strings.Contains(text, xss) || !strings.Contains(text, "compile panic on enum E{}") {
		t.Error("the clusters are not in the file as text")
	}
	if !strings.Contains(text, "introduced by 3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49 “simplify <b>enum</b> lowering”") {
		t.Error("the cluster's cause is not in the file")
	}
	for _, s := range []string{"<script", "<link", ` src="`, "/static/", `href="/`, "url("} {
		if strings.Contains(out, s) {
			t.Errorf("the file is not self-contained: it holds %q", s)
		}
	}
	if !strings.Contains(out, "<svg") || !strings.Contains(out, "<polygon") {
		t.Error("no inline trend picture")
	}
	// The CSP meta allows exactly the inline stylesheet, by its hash.
	m := regexp.MustCompile(`<style>(?s)(.*?)</style>`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no inline stylesheet")
	}
	sum := sha256.Sum256([]byte(m[1]))
	// Attribute values are entity-escaped (' and + among them); the browser
	// reads them unescaped.
	unescaped := html.UnescapeString(out)
	want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	if !strings.Contains(unescaped, want) || !strings.Contains(unescaped, "default-src 'none'") {
		t.Errorf("the CSP meta does not pin the inline stylesheet (%s)", want)
	}
	buf.Reset()
	RenderReport(&buf, rep, hist, 1, time.Now())
	if strings.Contains(buf.String(), "dead link") {
		t.Error("top 1 kept more than one cluster")
	}
}
