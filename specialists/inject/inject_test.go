package inject

import (
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/qafleet/fleetd/fixtures/injection"
)

func TestServedVerbatimAndCSP(t *testing.T) {
	stored := `<h1>bob</h1><script>alert("x")</script><img src=x onerror="f()">`
	if got := ServedVerbatim(stored, "<body>"+stored+"</body>"); got != `<script>alert("x")</script>` {
		t.Errorf("raw: %q", got)
	}
	escaped := "&lt;h1&gt;bob&lt;/h1&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
	if got := ServedVerbatim(stored, escaped); got != "" {
		t.Errorf("escaped: %q", got)
	}
	if got := ServedVerbatim("<h1>just a heading</h1>", "<h1>just a heading</h1>"); got != "" {
		t.Errorf("benign html: %q", got)
	}
	for csp, want := range map[string]bool{
		"":                                      false,
		"default-src 'self'":                    true,
		"script-src 'self' 'unsafe-inline'":     false,
		"img-src *; script-src 'nonce-abc'":     true,
		"frame-ancestors 'none'":                false,
		"default-src * 'unsafe-inline'; x y":    false,
		"DEFAULT-SRC 'self'; script-src 'self'": true,
	} {
		if got := BlocksInlineScript(csp); got != want {
			t.Errorf("blocksInlineScript(%q) = %v", csp, got)
		}
	}
}

// TestPlanRounds: a field's places go to successive rounds, and two fields
// in one script element are never tested together.
func TestPlanRounds(t *testing.T) {
	a, b, c := field{Name: "a", Key: "0xa"}, field{Name: "b", Key: "0xb"}, field{Name: "c", Key: "0xc"}
	script := landing{Ctx: ctxScript, Tag: "script", JS: jsDQ, Container: 7}
	tasks := []*storedTask{
		{f: a, l: landing{Ctx: ctxText, Container: 3}, pages: []string{"p"}},
		{f: a, l: script, pages: []string{"p"}},
		{f: b, l: script, pages: []string{"p"}},
		{f: c, l: landing{Ctx: ctxText, Container: 9}, pages: []string{"p"}},
		{f: c, l: landing{Ctx: ctxScript, Tag: "script", Container: 8}, pages: []string{"p"}},
	}
	planRounds(tasks)
	var got []int
	for _, t := range tasks {
		got = append(got, t.round)
	}
	want := []int{1, 2, 1, 1, 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rounds %v, want %v", got, want)
	}
	if sharesRawContainer(tasks[1], []*storedTask{tasks[2]}) != true || sharesRawContainer(tasks[4], []*storedTask{tasks[1]}) {
		t.Error("sharesRawContainer")
	}
}

// TestKeccakHex: field keys are keccak256 (not SHA3-256) of the name.
func TestKeccakHex(t *testing.T) {
	face := injection.Key("face")
	for in, want := range map[string]string{
		"":     "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
		"face": "0x" + hex.EncodeToString(face[:]),
	} {
		if got := keccakHex(in); got != want {
			t.Errorf("keccakHex(%q) = %s, want %s", in, got, want)
		}
	}
}
