package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCauseRecordRoundTrip(t *testing.T) {
	day := time.Date(2026, 11, 20, 10, 4, 0, 0, time.UTC)
	for _, c := range []Cause{
		{Commit: "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49", Subject: "simplify enum lowering", Date: day, Span: 12},
		{Commit: "3f2a9c1", Subject: "line one\nline two\x1b[31m"},
		{Since: "9b0c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c", Span: 64},
	} {
		f, err := c.Record("qa-fixer", SurfaceCompiler, "5c1e0a9d2b3f4a10", "fleetd's fix stage bisected this cluster.")
		if err != nil {
			t.Fatal(err)
		}
		text, err := Format(f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseCause(&back)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want := c
		want.Subject = PlainText(c.Subject, MaxCauseSubject)
		if got != want {
			t.Errorf("%q reads back as %+v, want %+v", text, got, want)
		}
		if !strings.Contains(text, "sev=meta") || !strings.Contains(text, "kind=cause") {
			t.Errorf("record %q", text)
		}
	}
	if got := (&Cause{Commit: "3f2a9c1d0e8b7a6f5e", Subject: "x", Date: day}).Line(); got != `introduced by 3f2a9c1d0e8b "x" (2026-11-20)` {
		t.Errorf("Line = %q", got)
	}
	if got := (&Cause{Since: "9b0c8d7e6f5a4b3c", Span: 64}).Line(); got != "present since the oldest commit tried (9b0c8d7e6f5a, 64 commits back)" {
		t.Errorf("Line = %q", got)
	}
	if _, err := (Cause{Commit: "XYZ"}).Record("qa-fixer", SurfaceCompiler, "1", ""); !errors.Is(err, ErrBadCause) {
		t.Errorf("a bad commit formats: %v", err)
	}
}

func TestParseCauseRejects(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"qa/v1 source=a sev=meta surface=b kind=cause commit=3f2a9c1", "without ref="},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1", "neither commit= nor since="},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3f2a9c1 since=3f2a9c1", "both"},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3F2A9C1", "not a commit hash"},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=abc", "not a commit hash"},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 since=--upload-pack=x", "not a commit hash"},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3f2a9c1 date=yesterday", "not an RFC 3339 time"},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 since=3f2a9c1 date=2026-11-20T10:04:00Z", "date= without commit="},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3f2a9c1 span=-3", "not a count"},
		{"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3f2a9c1 span=99999999999999999999", "not a count"},
		{"qa/v1 source=a sev=meta surface=b kind=resolution ref=1 commit=3f2a9c1", "is not cause"},
		{"a free-form note about a cause", "is not cause"},
	} {
		f, _ := Parse(tc.text)
		_, err := ParseCause(&f)
		if !errors.Is(err, ErrBadCause) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}

// FuzzParseCause: whatever the log holds, ParseCause returns a cause it
// can write back as the same cause, or an ErrBadCause.
func FuzzParseCause(f *testing.F) {
	for _, s := range []string{
		"qa/v1 source=qa-fixer sev=meta surface=compiler kind=cause ref=5c1e0a9d2b3f4a10 commit=3f2a9c1d date=2026-11-20T10:04:00Z span=12\nprose\nsubject: simplify enum lowering",
		"qa/v1 source=qa-fixer sev=meta surface=compiler kind=cause ref=12 since=9b0c8d7e span=64",
		"qa/v1 source=qa-fixer sev=meta surface=compiler kind=cause ref=12 commit=9b0c8d7e date=2026-11-20T10:04:00.25+02:00 span=064",
		"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3f2a9c1 since=3f2a9c1",
		"qa/v1 source=a sev=meta surface=b kind=cause ref=1 commit=3f2a9c1\nsubject: \xff\u202e\nsubject: second",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, _ := Parse(text)
		c, err := ParseCause(&p)
		if err != nil {
			if !errors.Is(err, ErrBadCause) {
				t.Fatalf("error %v does not wrap ErrBadCause", err)
			}
			return
		}
		rec, err := c.Record(p.Source, p.Surface, p.Ref, "")
		if err != nil {
			t.Fatalf("a parsed cause %+v does not write back: %v", c, err)
		}
		out, err := Format(rec)
		if err != nil {
			t.Fatalf("Format: %v", err)
		}
		back, _ := Parse(out)
		again, err := ParseCause(&back)
		if err != nil || again != c {
			t.Fatalf("%q reads back as %+v, %v; want %+v", out, again, err, c)
		}
	})
}
