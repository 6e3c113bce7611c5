package redteam

import (
	"strings"
	"testing"
)

// TestFamiliesParse: the embedded families are valid, and a broken file is
// refused naming the file and the field.
func TestFamiliesParse(t *testing.T) {
	fams, err := DefaultFamilies()
	if err != nil || len(fams) < 5 {
		t.Fatalf("embedded families: %d, %v", len(fams), err)
	}
	for _, tc := range []struct{ src, want string }{
		{"family: X\nversion: 1\ntitle: t\nowasp: LLM01:2025\nseverity: high\ndetect: [expect]\nprobes: [{id: a, message: m, expect: e}]", "x.yaml: family: \"X\""},
		{"family: x\nversion: 0\ntitle: t\nowasp: LLM01:2025\nseverity: high\ndetect: [secrets]\nprobes: [{id: a, message: m}]", "version: want 1"},
		{"family: x\nversion: 1\ntitle: t\nowasp: LLM11:2025\nseverity: high\ndetect: [secrets]\nprobes: [{id: a, message: m}]", "owasp:"},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: urgent\ndetect: [secrets]\nprobes: [{id: a, message: m}]", "severity:"},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: high\ndetect: [vibes]\nprobes: [{id: a, message: m}]", "detect[0]: \"vibes\""},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: high\ndetect: [secrets]\nprobes: [{id: a, message: 'hi {nope}'}]", "unknown placeholder {nope}"},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: high\ndetect: [expect]\nprobes: [{id: a, message: 'say {canary_a}', expect: '{canary_a}'}]", "occurs in the message"},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: high\ndetect: [expect]\nprobes: [{id: a, message: m}]", "needs a probe with expect"},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: high\ndetect: [secrets]\nprobes: []", "probes: at least one"},
		{"family: x\nversion: 1\ntitle: t\ncwe: CWE-1427\nseverity: high\ndetect: [secrets]\nprobes: [{id: a, message: m}, {id: a, message: n}]", "probes[1].id"},
		{"family: x\nversion: 1\nbogus: 1\n", "field bogus not found"},
		{"{", "x.yaml:"},
	} {
		_, err := ParseFamily("x.yaml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}
