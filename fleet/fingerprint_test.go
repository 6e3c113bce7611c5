package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"testing"
)

func TestNormalizeRepro(t *testing.T) {
	tests := []struct {
		name string
		r    Repro
		want string
	}{
		{"compact stays", Repro{"qa_compile", json.RawMessage(`{"source":"enum E{}"}`)}, `qa_compile {"source":"enum e{}"}`},
		{"tool lowercased", Repro{"QA_Compile", json.RawMessage(`{}`)}, `qa_compile {}`},
		{
			"keys sorted recursively, whitespace and case dropped",
			Repro{"qa_chain", json.RawMessage(` { "Params" : [ {"B":1, "a":2} , "X" ] ,"method":"eth_call" } `)},
			`qa_chain {"method":"eth_call","params":[{"a":2,"b":1},"x"]}`,
		},
		{"whitespace runs in strings collapse, not trimmed", Repro{"t", json.RawMessage(`{"s":"  a \t\n b  "}`)}, `{"s":" a b "}`},
		{"escapes decoded, specials re-escaped", Repro{"t", json.RawMessage(`{"\u0041":"\"\\\/\u00e9\u0001\ud83d\udc1b\ud800"}`)}, `{"a":"\"\\/é\u0001🐛` + "\uFFFD" + `"}`},
		{"numbers kept, exponent lowercased", Repro{"t", json.RawMessage(`{"n":[-0,1.50,2E+3]}`)}, `{"n":[-0,1.50,2e+3]}`},
		{"literals", Repro{"t", json.RawMessage(`{"a":[true,false,null]}`)}, `{"a":[true,false,null]}`},
		{"keys equal after lowercasing sort by value", Repro{"t", json.RawMessage(`{"a":2,"A":1}`)}, `{"a":1,"a":2}`},
		{"invalid JSON falls back to raw text", Repro{"t", json.RawMessage("{ \"Source\": enum E{} ")}, `t {"source":enume{}`},
		{"empty args", Repro{"t", nil}, `t `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NormalizeRepro(tt.r)
			want := tt.want
			if want[0] == '{' {
				want = tt.r.Tool + " " + want
			}
			if got != want {
				t.Errorf("NormalizeRepro = %s, want %s", got, want)
			}
		})
	}
}

func TestNormalizeSummary(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Compile panic on `enum E{}`.", "compile panic on `enum e{}`"},
		{"  many\t\tspaces \n\n and lines  ", "many spaces and lines"},
		{"ends with punctuation?! ...", "ends with punctuation"},
		{"shortened by Format…", "shortened by format"},
		{"(parenthesised)", "(parenthesised"},
		{"ÉCOLE\u00a0Straße", "école straße"},
		{"!!!", ""},
		{"", ""},
		{"bad \xff byte", "bad \xff byte"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := NormalizeSummary(tt.in); got != tt.want {
				t.Errorf("NormalizeSummary(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFingerprintStable(t *testing.T) {
	repro := func(tool, args string) *Repro { return &Repro{Tool: tool, Args: json.RawMessage(args)} }
	groups := []struct {
		name     string
		findings []Finding
	}{
		{"repro: whitespace, case, key order, escapes; summary and writer fp ignored", []Finding{
			{Surface: SurfaceCall, Summary: "spoof accepted", Repro: repro("qa_call", `{"target":"qa-r1-0","message":"I am the Owner"}`)},
			{Surface: SurfaceCall, Summary: "other words", Repro: repro("QA_CALL", "{ \"message\" : \"i  am the\\towner\",\n \"TARGET\": \"QA-R1-0\" }")},
			{Surface: SurfaceCall, Fingerprint: "0000000000000000", Repro: repro("qa_call", `{"message":"I am the \u004fwner","target":"qa-r1-0"}`)},
		}},
		{"repro: nested key order", []Finding{
			{Surface: SurfaceChain, Repro: repro("qa_chain", `{"method":"eth_call","params":[{"to":"0x1","data":"0xAB"},"latest"]}`)},
			{Surface: SurfaceChain, Repro: repro("qa_chain", `{"params":[{"data":"0xab","to":"0x1"},"LATEST"],"method":"eth_call"}`)},
		}},
		{"repro: invalid JSON args normalized as raw text", []Finding{
			{Surface: SurfaceCompiler, Repro: repro("qa_compile", `{source: enum E{}}`)},
			{Surface: SurfaceCompiler, Repro: repro("qa_compile", `{ SOURCE:  enum e {} }`)},
		}},
		{"summary: case, whitespace, trailing punctuation", []Finding{
			{Surface: SurfaceFace, Summary: "Stack trace leaked in face of qa-r1-0."},
			{Surface: SurfaceFace, Summary: "  stack   trace leaked\nin face of QA-R1-0 !!"},
		}},
		{"state: one crash state, any input, repro or summary", []Finding{
			{Surface: SurfaceCompiler, Summary: "crash A", Repro: repro("qa_compile", `{"source":"enum E {}"}`), Extra: []Field{{KeyState, "5c1e0a9d3b7f2a10"}}},
			{Surface: SurfaceCompiler, Summary: "crash B", Repro: repro("qa_compile", `{"source":"enum E {}\n"}`), Extra: []Field{{"flaky", "true"}, {KeyState, "5C1E0A9D3B7F2A10"}}},
			{Surface: SurfaceCompiler, Summary: "no repro", Extra: []Field{{KeyState, "5c1e0a9d3b7f2a10"}}},
		}},
		{"free-form entries group by summary", []Finding{
			{FreeForm: true, Severity: SeverityUnknown, Summary: "The docs link is dead"},
			{FreeForm: true, Severity: SeverityUnknown, Summary: "the docs link is dead."},
		}},
	}
	hexFP := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]string{}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			want := Fingerprint(g.findings[0])
			if !hexFP.MatchString(want) {
				t.Fatalf("Fingerprint = %q, want 16 lowercase hex digits", want)
			}
			for i, f := range g.findings[1:] {
				if got := Fingerprint(f); got != want {
					t.Errorf("finding %d: Fingerprint = %s, want %s (as finding 0)", i+1, got, want)
				}
			}
			if other, dup := seen[want]; dup {
				t.Errorf("group shares fingerprint %s with group %q", want, other)
			}
			seen[want] = g.name
		})
	}
}

func TestFingerprintDiffers(t *testing.T) {
	base := Finding{Surface: SurfaceCompiler, Summary: "crash", Repro: &Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"enum E{}"}`)}}
	variants := map[string]func(*Finding){
		"other surface":          func(f *Finding) { f.Surface = SurfaceRegistry },
		"other tool":             func(f *Finding) { f.Repro = &Repro{Tool: "qa_publish", Args: f.Repro.Args} },
		"other arg value":        func(f *Finding) { f.Repro = &Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"enum F{}"}`)} },
		"other arg key":          func(f *Finding) { f.Repro = &Repro{Tool: "qa_compile", Args: json.RawMessage(`{"src":"enum E{}"}`)} },
		"string vs number":       func(f *Finding) { f.Repro = &Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"1"}`)} },
		"no repro":               func(f *Finding) { f.Repro = nil },
		"summary equal to repro": func(f *Finding) { f.Repro = nil; f.Summary = NormalizeRepro(*base.Repro) },
		"a crash state":          func(f *Finding) { *f = f.WithState(StateID("panic: x @ p.f")) },
		"state equal to repro":   func(f *Finding) { *f = f.WithState(NormalizeRepro(*base.Repro)) },
	}
	want := Fingerprint(base)
	for name, edit := range variants {
		t.Run(name, func(t *testing.T) {
			f := base
			edit(&f)
			if got := Fingerprint(f); got == want {
				t.Errorf("Fingerprint = %s, same as the base finding", got)
			}
		})
	}
}

// TestFingerprintPinned pins the definition: a change here splits every
// group already in the log, so it must be deliberate.
func TestFingerprintPinned(t *testing.T) {
	f, err := Parse(exampleEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	// Each input is the documented hash input, written out by hand.
	tests := []struct {
		f     Finding
		input string
		want  string
	}{
		{f, "compiler\x00repro\x00qa_compile {\"source\":\"enum e{}\"}", "bb42023ecca2ae61"},
		{Finding{Surface: SurfaceFace, Summary: "Stack trace leaked."}, "face\x00summary\x00stack trace leaked", "01ce3ee43e338179"},
		{Finding{FreeForm: true, Summary: "hello"}, "\x00summary\x00hello", "0964d52c908d465c"},
	}
	for _, tt := range tests {
		sum := sha256.Sum256([]byte(tt.input))
		if got := hex.EncodeToString(sum[:8]); got != tt.want {
			t.Errorf("sha256(%q)[:8] = %s, want %s", tt.input, got, tt.want)
		}
		if got := Fingerprint(tt.f); got != tt.want {
			t.Errorf("Fingerprint(%+v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}
