package fleet

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		exampleEnvelope,
		"qa/v1 source=a sev=low surface=b",
		"qa/v1 source=a sev=low surface=b kind=resolution ref=12 x=y=z\n\n  multi\nline  \nrepro: t {\"a\":[1,{\"b\":null}]}\nafter",
		"\r\n qa/v1\tsource=A sev=HIGH surface=Face\r\nx\r\n\t repro:  t  { \"k\" : \"\\u00e9\" } \r\n",
		"qa/v1 source=a sev=low surface=b\nrepro: t {}\nrepro: u {\"v\":1}",
		"qa/v1 source=a sev=low surface=b\nrepro: t [1]",
		"qa/v1 source=a sev=low\nsurface=b",
		"qa/v1",
		"qa/v1x",
		"just a human note",
		"bad \xff utf8",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := Parse(text)
		_ = Fingerprint(got) // must not panic either
		// ParseInto gives the same result, into a reused Repro.
		reused := Repro{Tool: "stale", Args: []byte(`{"stale":true,"longer than most args":1}`)}
		into, intoErr := ParseInto(text, &reused)
		if (err == nil) != (intoErr == nil) || !cmp.Equal(got, into, cmpopts.EquateEmpty()) {
			t.Fatalf("ParseInto = %+v, %v; Parse = %+v, %v", into, intoErr, got, err)
		}
		if into.Repro != nil && into.Repro != &reused {
			t.Fatal("ParseInto allocated a Repro instead of using the one given")
		}
		if err != nil || got.FreeForm {
			want := Finding{Severity: SeverityUnknown, FreeForm: true, Summary: strings.TrimSpace(text)}
			if got.Summary != want.Summary || got.Severity != want.Severity || !got.FreeForm || got.Repro != nil || got.Source != "" {
				t.Fatalf("free-form result %+v (err %v), want %+v", got, err, want)
			}
			return
		}
		out, err := Format(got)
		if err != nil {
			t.Fatalf("Format(Parse(text)) = %v\ntext: %q\nparsed: %+v", err, text, got)
		}
		checkRoundTrip(t, got, out)
		if len(out) > len(text) {
			t.Fatalf("Format(Parse(text)) is %d bytes, longer than the %d it came from", len(out), len(text))
		}
	})
}

func FuzzFormatParse(f *testing.F) {
	f.Add("qa-fuzz", "high", "compiler", "", "5c1e0a9d3b7f2a10", "r-1", "", "", "",
		"compile panic on `enum E{}`", "qa_compile", []byte(`{"source":"enum E{}"}`), true, false)
	f.Add("qa-fixer", "info", "compiler", "resolution", "", "", "1234", "build", "v1+x=y",
		"", "", []byte(nil), false, false)
	f.Add("a", "low", "b", "", "", "", "", "", "", " multi\n\nline\n", "t", []byte(" { \"a\" : [ 1 , 2 ] } "), true, false)
	f.Add("a", "low", "b", "", "", "", "", "", "", strings.Repeat("é", 1100), "t", []byte(`{}`), true, false)
	f.Add("", "", "", "", "", "", "", "", "", "free text\n", "", []byte(nil), false, true)
	f.Add("a", "low", "b", "", "", "", "", "", "", "x\nrepro: t {}", "", []byte(nil), false, false)
	f.Fuzz(func(t *testing.T, source, sev, surface, kind, fp, run, ref, extraKey, extraValue, summary, tool string, args []byte, hasRepro, freeForm bool) {
		fin := Finding{
			Source: source, Severity: Severity(sev), Surface: Surface(surface), Kind: Kind(kind),
			Fingerprint: fp, Run: run, Ref: ref, Summary: summary, FreeForm: freeForm,
		}
		if freeForm {
			fin.Severity = SeverityUnknown
		}
		if extraKey != "" || extraValue != "" {
			fin.Extra = []Field{{extraKey, extraValue}}
		}
		if hasRepro {
			fin.Repro = &Repro{Tool: tool, Args: json.RawMessage(args)}
		}
		out, err := Format(fin)
		if err != nil {
			if out != "" {
				t.Fatalf("Format returned %q with error %v", out, err)
			}
			return
		}
		checkRoundTrip(t, fin, out)
	})
}

// FuzzCanonicalJSON checks that the hand-written scanner agrees with
// encoding/json on validity (Format validates with one, Parse with the
// other) and that the canonical form is valid JSON and a fixed point.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{
		`{"source":"enum E{}"}`, ` { "B" : [1, -0.5e+3, true, null, "x\u00e9\ud83d\udc1b"], "a": {} } `,
		`{"a":1,"A":2}`, `[`, `{"a":01}`, `"\ud800"`, "\"\xff\"", `1.`, `-`, `{"a" 1}`, `[1,]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := jsonValid(data)
		if want := json.Valid(data); (err == nil) != want {
			t.Fatalf("jsonValid(%q) = %v, json.Valid = %v", data, err, want)
		}
		canon, ok := appendCanonicalJSON(nil, data)
		if ok != (err == nil) {
			t.Fatalf("appendCanonicalJSON ok = %v, jsonValid error %v", ok, err)
		}
		_ = NormalizeRepro(Repro{Tool: "t", Args: data})
		if !ok {
			return
		}
		if !json.Valid(canon) {
			t.Fatalf("canonical form %q of %q is not valid JSON", canon, data)
		}
		again, ok := appendCanonicalJSON(nil, canon)
		if !ok || string(again) != string(canon) {
			t.Fatalf("canonical form is not a fixed point:\n%q\n%q", canon, again)
		}
	})
}
