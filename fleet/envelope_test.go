package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

const exampleEnvelope = "qa/v1 source=qa-fuzz sev=high surface=compiler fp=5c1e0a9d3b7f2a10 run=r-20261122-0412\n" +
	"compile panic on `enum E{}` with no variants, expected a clean error.\n" +
	`repro: qa_compile {"source":"enum E{}"}`

func exampleFinding() Finding {
	return Finding{
		Source:      "qa-fuzz",
		Severity:    SeverityHigh,
		Surface:     SurfaceCompiler,
		Fingerprint: "5c1e0a9d3b7f2a10",
		Run:         "r-20261122-0412",
		Summary:     "compile panic on `enum E{}` with no variants, expected a clean error.",
		Repro:       &Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"enum E{}"}`)},
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Finding
	}{
		{
			name: "design example",
			text: exampleEnvelope,
			want: exampleFinding(),
		},
		{
			name: "any key order, tabs and runs of spaces",
			text: "qa/v1\trun=r-20261122-0412  surface=compiler fp=5c1e0a9d3b7f2a10 \t sev=high source=qa-fuzz \n" +
				"compile panic on `enum E{}` with no variants, expected a clean error.\n" +
				`repro: qa_compile {"source":"enum E{}"}`,
			want: exampleFinding(),
		},
		{
			name: "case-insensitive sev, surface and source",
			text: "qa/v1 source=QA-Fuzz sev=HIGH surface=Compiler\nx",
			want: Finding{Source: "qa-fuzz", Severity: SeverityHigh, Surface: SurfaceCompiler, Summary: "x"},
		},
		{
			name: "unknown keys kept in order, verbatim",
			text: "qa/v1 zeta=Z source=qa-ux build=v1.2.3+dirty sev=low surface=new-surface alpha=a=b\nx",
			want: Finding{
				Source: "qa-ux", Severity: SeverityLow, Surface: "new-surface", Summary: "x",
				Extra: []Field{{"zeta", "Z"}, {"build", "v1.2.3+dirty"}, {"alpha", "a=b"}},
			},
		},
		{
			name: "value may contain =",
			text: "qa/v1 source=qa-ux sev=info surface=docs ref=https://x.test/?a=b&c=d\nlink",
			want: Finding{Source: "qa-ux", Severity: SeverityInfo, Surface: SurfaceDocs, Ref: "https://x.test/?a=b&c=d", Summary: "link"},
		},
		{
			name: "multi-line summary, inner blank line and indentation kept",
			text: "qa/v1 source=qa-ux sev=medium surface=face\n\n  first line\n\n    second line  \nthird\n\n",
			want: Finding{Source: "qa-ux", Severity: SeverityMedium, Surface: SurfaceFace, Summary: "first line\n\n    second line  \nthird"},
		},
		{
			name: "repro with nested JSON kept as written",
			text: "qa/v1 source=qa-fuzz sev=critical surface=call\nspoofed identity accepted\n" +
				`repro: qa_call {"target":"qa-r1-0", "message":{"from":"0xabc","parts":[1,{"x":null}],"s":"a } b"}}`,
			want: Finding{
				Source: "qa-fuzz", Severity: SeverityCritical, Surface: SurfaceCall, Summary: "spoofed identity accepted",
				Repro: &Repro{Tool: "qa_call", Args: json.RawMessage(`{"target":"qa-r1-0", "message":{"from":"0xabc","parts":[1,{"x":null}],"s":"a } b"}}`)},
			},
		},
		{
			name: "header only: resolution record with empty summary",
			text: "qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=1234 fp=5c1e0a9d3b7f2a10",
			want: Finding{Source: "qa-fixer", Severity: SeverityInfo, Surface: SurfaceCompiler, Kind: KindResolution, Ref: "1234", Fingerprint: "5c1e0a9d3b7f2a10"},
		},
		{
			name: "repro without summary",
			text: "qa/v1 source=a sev=low surface=b\nrepro: qa_fetch {\"url\":\"https://x.test/\"}",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Repro: &Repro{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"https://x.test/"}`)}},
		},
		{
			name: "unknown kind kept",
			text: "qa/v1 source=a sev=low surface=b kind=Reopened\nagain",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Kind: "Reopened", Summary: "again"},
		},
		{
			name: "CRLF line endings and surrounding blank lines",
			text: "\r\n  qa/v1 source=a sev=low surface=b\r\nline one\r\nline two\r\nrepro: t {\"k\":1}\r\n\r\n",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "line one\r\nline two", Repro: &Repro{Tool: "t", Args: json.RawMessage(`{"k":1}`)}},
		},
		{
			name: "indented repro line, extra spaces around args",
			text: "qa/v1 source=a sev=low surface=b\nx\n\t repro:   t   { \"k\" : 1 }   ",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "x", Repro: &Repro{Tool: "t", Args: json.RawMessage(`{ "k" : 1 }`)}},
		},
		{
			name: "the last repro line wins, earlier ones are summary",
			text: "qa/v1 source=a sev=low surface=b\nx\nrepro: old {\"v\":1}\nrepro: new {\"v\":2}",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "x\nrepro: old {\"v\":1}", Repro: &Repro{Tool: "new", Args: json.RawMessage(`{"v":2}`)}},
		},
		{
			name: "text after the repro line joins the summary",
			text: "qa/v1 source=a sev=low surface=b\nbefore\nrepro: t {}\nafter\n",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "before\nafter", Repro: &Repro{Tool: "t", Args: json.RawMessage(`{}`)}},
		},
		{
			name: "repro: without a space, or mid-line, is summary",
			text: "qa/v1 source=a sev=low surface=b\nrepro:none\nsee repro: t {}",
			want: Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "repro:none\nsee repro: t {}"},
		},
		{
			name: "free-form human text",
			text: "  the face of qa-r1-0 shows a stack trace  \n",
			want: Finding{Severity: SeverityUnknown, FreeForm: true, Summary: "the face of qa-r1-0 shows a stack trace"},
		},
		{
			name: "other version is free-form",
			text: "qa/v2 source=a sev=low surface=b\nx",
			want: Finding{Severity: SeverityUnknown, FreeForm: true, Summary: "qa/v2 source=a sev=low surface=b\nx"},
		},
		{
			name: "magic must be a whole word",
			text: "qa/v1x source=a sev=low surface=b",
			want: Finding{Severity: SeverityUnknown, FreeForm: true, Summary: "qa/v1x source=a sev=low surface=b"},
		},
		{
			name: "empty text",
			text: "",
			want: Finding{Severity: SeverityUnknown, FreeForm: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const hdr = "qa/v1 source=a sev=low surface=b"
	tests := []struct {
		name    string
		text    string
		wantErr string
	}{
		{"magic alone", "qa/v1", `qa/v1 header: missing required key "source"`},
		{"missing source", "qa/v1 sev=low surface=b\nx", `qa/v1 header: missing required key "source"`},
		{"missing sev", "qa/v1 source=a surface=b\nx", `qa/v1 header: missing required key "sev"`},
		{"missing surface", "qa/v1 source=a sev=low\nx", `qa/v1 header: missing required key "surface"`},
		{"required key on the second line", "qa/v1 source=a sev=low\nsurface=b", `qa/v1 header: missing required key "surface"`},
		{"bad sev", "qa/v1 source=a sev=severe surface=b", `qa/v1 header: invalid severity "severe": want one of critical, high, medium, low, info, meta, unknown`},
		{"sev unknown", "qa/v1 source=a sev=unknown surface=b", `qa/v1 header: sev "unknown" is only for free-form entries`},
		{"bad surface", "qa/v1 source=a sev=low surface=b!", `qa/v1 header: invalid surface "b!": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"bad source", "qa/v1 source=qa_fuzz sev=low surface=b", `qa/v1 header: invalid source "qa_fuzz": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"duplicate standard key", "qa/v1 source=a sev=low surface=b sev=high", `qa/v1 header: duplicate key "sev"`},
		{"duplicate optional key", "qa/v1 source=a sev=low surface=b run=1 run=1", `qa/v1 header: duplicate key "run"`},
		{"duplicate unknown key", "qa/v1 source=a x=1 sev=low surface=b x=2", `qa/v1 header: duplicate key "x"`},
		{"field without =", "qa/v1 source=a sev=low surface=b oops", `qa/v1 header: field "oops" is not key=value`},
		{"empty key", "qa/v1 source=a sev=low surface=b =x", `qa/v1 header: invalid key "": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"uppercase key", "qa/v1 source=a SEV=low surface=b", `qa/v1 header: invalid key "SEV": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"empty value", "qa/v1 source=a sev=low surface=b fp=", `qa/v1 header: empty value for key "fp"`},
		{"non-ASCII value", "qa/v1 source=a sev=low surface=b run=é", `qa/v1 header: value of "run" has 'é' at byte 0: want printable ASCII without spaces`},
		{"control byte in value", "qa/v1 source=a sev=low surface=b ref=x\vy", `qa/v1 header: value of "ref" has '\v' at byte 1: want printable ASCII without spaces`},
		{"repro bad tool", hdr + "\nx\nrepro: qa/compile {}", `qa/v1 repro: invalid tool "qa/compile": want [A-Za-z0-9_.-]{1,64}`},
		{"repro missing args", hdr + "\nx\nrepro: qa_compile", `qa/v1 repro: missing JSON args after tool "qa_compile"`},
		{"repro missing args, trailing space", hdr + "\nx\nrepro: qa_compile  \r", `qa/v1 repro: missing JSON args after tool "qa_compile"`},
		{"repro missing tool", hdr + "\nx\nrepro: {\"a\":1}", `qa/v1 repro: invalid tool "{\"a\":1}": want [A-Za-z0-9_.-]{1,64}`},
		{"repro bad JSON", hdr + "\nx\nrepro: t {\"a\":}", `qa/v1 repro: args for "t" are not valid JSON: invalid character '}' at byte 5 (looking for a value)`},
		{"repro truncated JSON", hdr + "\nx\nrepro: t {\"a\":[1,", `qa/v1 repro: args for "t" are not valid JSON: unexpected end of JSON (looking for a value)`},
		{"repro trailing garbage", hdr + "\nx\nrepro: t {} {}", `qa/v1 repro: args for "t" are not valid JSON: invalid character '{' at byte 3 (after top-level value)`},
		{"repro args an array", hdr + "\nx\nrepro: t [1]", `qa/v1 repro: args for "t" are not a JSON object`},
		{"repro args a string", hdr + "\nx\nrepro: t \"src\"", `qa/v1 repro: args for "t" are not a JSON object`},
		{"not UTF-8", hdr + "\nbad \xff byte", `feedback text is not valid UTF-8`},
		{"too long", hdr + "\n" + strings.Repeat("x", MaxEnvelopeBytes-len(hdr)), `feedback text is 2049 bytes, max 2048: too long`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.text)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("Parse error = %q, want %q", gotErr, tt.wantErr)
			}
			want := Finding{Severity: SeverityUnknown, FreeForm: true, Summary: strings.TrimSpace(tt.text)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse with error must return the text as free-form (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Parse(strings.Repeat("x", MaxEnvelopeBytes+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("Parse of %d bytes: error %v does not wrap ErrTooLong", MaxEnvelopeBytes+1, err)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		f    Finding
		want string
	}{
		{
			name: "design example",
			f:    exampleFinding(),
			want: exampleEnvelope,
		},
		{
			name: "fixed field order, extra in given order, args compacted, summary trimmed",
			f: Finding{
				Ref: "77", Run: "r-1", Fingerprint: "ff", Kind: KindDuplicateOf, Surface: SurfaceChain, Severity: SeverityMedium, Source: "qa-security",
				Extra:   []Field{{"zz", "1"}, {"aa", "x=y"}},
				Summary: "\n  same as 77  \n",
				Repro:   &Repro{Tool: "qa_chain", Args: json.RawMessage(" {\n \"method\" : \"eth_call\", \"params\": [ 1, 2 ] }\n")},
			},
			want: "qa/v1 source=qa-security sev=medium surface=chain kind=duplicate-of fp=ff run=r-1 ref=77 zz=1 aa=x=y\n" +
				"same as 77\n" +
				`repro: qa_chain {"method":"eth_call","params":[1,2]}`,
		},
		{
			name: "header only",
			f:    Finding{Source: "qa-fixer", Severity: SeverityInfo, Surface: SurfaceCompiler, Kind: KindResolution, Ref: "12", Summary: " \n "},
			want: "qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=12",
		},
		{
			name: "repro without summary",
			f:    Finding{Source: "a", Severity: SeverityLow, Surface: "b", Repro: &Repro{Tool: "t", Args: json.RawMessage(`{}`)}},
			want: "qa/v1 source=a sev=low surface=b\nrepro: t {}",
		},
		{
			name: "summary repro lines are fine when a real repro follows",
			f:    Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "repro: old {}", Repro: &Repro{Tool: "t", Args: json.RawMessage(`{}`)}},
			want: "qa/v1 source=a sev=low surface=b\nrepro: old {}\nrepro: t {}",
		},
		{
			name: "free-form",
			f:    Finding{FreeForm: true, Severity: SeverityUnknown, Summary: "  thanks for the fix!\n"},
			want: "thanks for the fix!",
		},
		{
			name: "free-form ignores envelope fields",
			f:    Finding{FreeForm: true, Source: "x", Severity: SeverityHigh, Summary: "note"},
			want: "note",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Format(tt.f)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			if got != tt.want {
				t.Errorf("Format =\n%s\nwant\n%s", got, tt.want)
			}
			checkRoundTrip(t, tt.f, got)
		})
	}
}

func TestFormatErrors(t *testing.T) {
	base := func(edit func(*Finding)) Finding {
		f := Finding{Source: "a", Severity: SeverityLow, Surface: "b", Summary: "x"}
		edit(&f)
		return f
	}
	tests := []struct {
		name    string
		f       Finding
		wantErr string
	}{
		{"missing source", base(func(f *Finding) { f.Source = "" }), "qa/v1 format: missing source"},
		{"invalid source", base(func(f *Finding) { f.Source = "QA-Fuzz" }), `qa/v1 format: invalid source "QA-Fuzz": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"missing sev", base(func(f *Finding) { f.Severity = "" }), "qa/v1 format: missing sev"},
		{"sev unknown", base(func(f *Finding) { f.Severity = SeverityUnknown }), `qa/v1 format: sev "unknown" is only for free-form entries`},
		{"invalid sev", base(func(f *Finding) { f.Severity = "High" }), `qa/v1 format: invalid sev "High": want one of critical, high, medium, low, info, meta`},
		{"missing surface", base(func(f *Finding) { f.Surface = "" }), "qa/v1 format: missing surface"},
		{"invalid surface", base(func(f *Finding) { f.Surface = "on chain" }), `qa/v1 format: invalid surface "on chain": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"kind with space", base(func(f *Finding) { f.Kind = "false positive" }), `qa/v1 format: value of "kind" has ' ' at byte 5: want printable ASCII without spaces`},
		{"run with newline", base(func(f *Finding) { f.Run = "r\n1" }), `qa/v1 format: value of "run" has '\n' at byte 1: want printable ASCII without spaces`},
		{"fp non-ASCII", base(func(f *Finding) { f.Fingerprint = "ß" }), `qa/v1 format: value of "fp" has 'ß' at byte 0: want printable ASCII without spaces`},
		{"ref with tab", base(func(f *Finding) { f.Ref = "\t" }), `qa/v1 format: value of "ref" has '\t' at byte 0: want printable ASCII without spaces`},
		{"extra invalid key", base(func(f *Finding) { f.Extra = []Field{{"Build", "1"}} }), `qa/v1 format: extra: invalid key "Build": want a token [a-z0-9][a-z0-9._-]{0,31}`},
		{"extra standard key", base(func(f *Finding) { f.Extra = []Field{{"fp", "1"}} }), `qa/v1 format: extra key "fp": set the Finding field instead`},
		{"extra duplicate", base(func(f *Finding) { f.Extra = []Field{{"x", "1"}, {"x", "2"}} }), `qa/v1 format: extra: duplicate key "x"`},
		{"extra empty value", base(func(f *Finding) { f.Extra = []Field{{"x", ""}} }), `qa/v1 format: extra: empty value for key "x"`},
		{"repro bad tool", base(func(f *Finding) { f.Repro = &Repro{Tool: "qa compile", Args: json.RawMessage(`{}`)} }), `qa/v1 format: invalid repro tool "qa compile": want [A-Za-z0-9_.-]{1,64}`},
		{"repro empty tool", base(func(f *Finding) { f.Repro = &Repro{Args: json.RawMessage(`{}`)} }), `qa/v1 format: invalid repro tool "": want [A-Za-z0-9_.-]{1,64}`},
		{"repro bad JSON", base(func(f *Finding) { f.Repro = &Repro{Tool: "t", Args: json.RawMessage(`{"a":`)} }), `qa/v1 format: repro args for "t" are not valid JSON: unexpected end of JSON input`},
		{"repro no args", base(func(f *Finding) { f.Repro = &Repro{Tool: "t"} }), `qa/v1 format: repro args for "t" are not valid JSON: unexpected end of JSON input`},
		{"repro args an array", base(func(f *Finding) { f.Repro = &Repro{Tool: "t", Args: json.RawMessage(`[1]`)} }), `qa/v1 format: repro args for "t" are not a JSON object`},
		{"repro args not UTF-8", base(func(f *Finding) { f.Repro = &Repro{Tool: "t", Args: json.RawMessage("{\"a\":\"\xff\"}")} }), `qa/v1 format: repro args for "t" are not valid UTF-8`},
		{"summary not UTF-8", base(func(f *Finding) { f.Summary = "a\xffb" }), "qa/v1 format: summary is not valid UTF-8"},
		{"summary would read as a repro", base(func(f *Finding) { f.Summary = "x\n  repro: t {}" }), `qa/v1 format: summary has a line starting with "repro: " but Repro is nil`},
		{"free-form empty", Finding{FreeForm: true, Summary: " \n"}, "qa/v1 format: free-form text is empty"},
		{"free-form not UTF-8", Finding{FreeForm: true, Summary: "\xc3"}, "qa/v1 format: free-form text is not valid UTF-8"},
		{"free-form looks like an envelope", Finding{FreeForm: true, Summary: " qa/v1 source=x"}, `qa/v1 format: free-form text starts with "qa/v1", Parse would read it as an envelope`},
		{"header too long", base(func(f *Finding) { f.Extra = []Field{{"x", strings.Repeat("y", MaxEnvelopeBytes)}} }), "qa/v1 format: header and repro need 2083 bytes, max 2048: too long"},
		{
			"header and repro too long",
			base(func(f *Finding) {
				f.Repro = &Repro{Tool: "t", Args: json.RawMessage(`{"s":"` + strings.Repeat("y", 2000) + `"}`)}
			}),
			"qa/v1 format: header and repro need 2050 bytes, max 2048: too long",
		},
		{
			"no room left for a shortened summary",
			base(func(f *Finding) {
				f.Summary = "long enough to need shortening"
				f.Repro = &Repro{Tool: "t", Args: json.RawMessage(`{"s":"` + strings.Repeat("y", 1995) + `"}`)}
			}),
			"qa/v1 format: header and repro leave 2 bytes, no room for a shortened summary: too long",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Format(tt.f)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("Format error = %q, want %q", gotErr, tt.wantErr)
			}
			if got != "" {
				t.Errorf("Format returned %q with an error", got)
			}
			if strings.HasSuffix(tt.wantErr, ": too long") && !errors.Is(err, ErrTooLong) {
				t.Errorf("error %v does not wrap ErrTooLong", err)
			}
		})
	}
}

func TestFormatShortensSummary(t *testing.T) {
	f := Finding{Source: "qa-fuzz", Severity: SeverityHigh, Surface: SurfaceCompiler, Repro: &Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"x"}`)}}
	hdrRepro, err := Format(f)
	if err != nil {
		t.Fatal(err)
	}
	fixed := len(hdrRepro) + 1 // the summary's own newline
	room := MaxEnvelopeBytes - fixed

	t.Run("exactly at the limit is not shortened", func(t *testing.T) {
		f := f
		f.Summary = strings.Repeat("a", room)
		got, err := Format(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != MaxEnvelopeBytes || strings.Contains(got, ellipsis) {
			t.Errorf("len = %d, ellipsis %v; want %d bytes, no ellipsis", len(got), strings.Contains(got, ellipsis), MaxEnvelopeBytes)
		}
		checkRoundTrip(t, f, got)
	})
	t.Run("one byte over is shortened to exactly the limit", func(t *testing.T) {
		f := f
		f.Summary = strings.Repeat("a", room+1)
		got, err := Format(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != MaxEnvelopeBytes {
			t.Errorf("len = %d, want %d", len(got), MaxEnvelopeBytes)
		}
		p, _ := Parse(got)
		if want := strings.Repeat("a", room-len(ellipsis)) + ellipsis; p.Summary != want {
			t.Errorf("summary = %q..., want %d a's and an ellipsis", p.Summary[:10], room-len(ellipsis))
		}
		if !strings.HasSuffix(got, "\nrepro: qa_compile {\"source\":\"x\"}") {
			t.Errorf("repro was not kept intact: ...%q", got[len(got)-40:])
		}
		checkRoundTrip(t, f, got)
	})
	// A 4-byte rune after 0..3 ASCII bytes puts the cut at every position
	// inside a rune; the output must stay valid UTF-8 and lose only that rune.
	for pad := range 4 {
		t.Run("multibyte at the cut, pad "+string(rune('0'+pad)), func(t *testing.T) {
			f := f
			f.Summary = strings.Repeat("x", pad) + strings.Repeat("🐛", MaxEnvelopeBytes/4)
			got, err := Format(f)
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("output is not valid UTF-8")
			}
			if len(got) > MaxEnvelopeBytes || len(got) < MaxEnvelopeBytes-3 {
				t.Errorf("len = %d, want within a rune of %d", len(got), MaxEnvelopeBytes)
			}
			p, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(p.Summary, "🐛"+ellipsis) {
				t.Errorf("summary ends %q, want a whole rune then the ellipsis", p.Summary[len(p.Summary)-8:])
			}
			checkRoundTrip(t, f, got)
		})
	}
	t.Run("trailing space before the cut is dropped", func(t *testing.T) {
		f := f
		f.Summary = strings.Repeat("a", room-len(ellipsis)-2) + "  " + strings.Repeat("b", 10)
		got, err := Format(f)
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := Parse(got); !strings.HasSuffix(p.Summary, "a"+ellipsis) {
			t.Errorf("summary ends %q, want \"a…\"", p.Summary[len(p.Summary)-8:])
		}
	})
	t.Run("free-form", func(t *testing.T) {
		ff := Finding{FreeForm: true, Summary: strings.Repeat("é", MaxEnvelopeBytes)}
		got, err := Format(ff)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > MaxEnvelopeBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "é"+ellipsis) {
			t.Errorf("len %d, valid %v, suffix %q", len(got), utf8.ValidString(got), got[len(got)-6:])
		}
		checkRoundTrip(t, ff, got)
	})
}

// checkRoundTrip fails t unless Parse(text) gives back f, where text is what
// Format(f) returned: equal modulo the documented normalizations (summary
// trimmed or shortened with an ellipsis, args compacted, empty Extra nil).
func checkRoundTrip(t testing.TB, f Finding, text string) {
	t.Helper()
	if len(text) > MaxEnvelopeBytes || !utf8.ValidString(text) {
		t.Fatalf("Format output is %d bytes, valid UTF-8 %v", len(text), utf8.ValidString(text))
	}
	got, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(Format(f)): %v\ntext:\n%s", err, text)
	}
	want := normalized(t, f)
	if got.Summary != want.Summary {
		cut, ok := strings.CutSuffix(got.Summary, ellipsis)
		if !ok || !strings.HasPrefix(want.Summary, cut) {
			t.Fatalf("summary %q is neither %q nor a shortened prefix of it", got.Summary, want.Summary)
		}
		want.Summary = got.Summary
	}
	// reflect.DeepEqual first: cmp.Diff is slow, and fuzzers call this a lot.
	if got := normalized(t, got); !reflect.DeepEqual(want, got) {
		t.Fatalf("Parse(Format(f)) mismatch (-want +got):\n%s\ntext:\n%s", cmp.Diff(want, got), text)
	}
}

// normalized applies the normalizations Format and Parse are allowed to make.
func normalized(t testing.TB, f Finding) Finding {
	t.Helper()
	f.Summary = strings.TrimSpace(f.Summary)
	if len(f.Extra) == 0 {
		f.Extra = nil
	}
	if f.FreeForm {
		return Finding{Severity: SeverityUnknown, FreeForm: true, Summary: f.Summary}
	}
	if f.Repro != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, f.Repro.Args); err != nil {
			t.Fatalf("compact %q: %v", f.Repro.Args, err)
		}
		f.Repro = &Repro{Tool: f.Repro.Tool, Args: b.Bytes()}
	}
	return f
}

// BenchmarkParseFingerprint measures what triage does per log entry.
func BenchmarkParseFingerprint(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(exampleEnvelope)))
	for b.Loop() {
		f, err := Parse(exampleEnvelope)
		if err != nil {
			b.Fatal(err)
		}
		_ = Fingerprint(f)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "envelopes/s")
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(exampleEnvelope); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	f := exampleFinding()
	b.ReportAllocs()
	for b.Loop() {
		_ = Fingerprint(f)
	}
}

func BenchmarkFormat(b *testing.B) {
	f := exampleFinding()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Format(f); err != nil {
			b.Fatal(err)
		}
	}
}
