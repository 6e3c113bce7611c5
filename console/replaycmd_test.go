package console

import (
	"encoding/json"
	"html"
	"os/exec"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestReplayCommandIsWhole: the cluster page shows the repro's whole replay
// command, and a shell hands the tool exactly the recorded arguments back,
// quotes included.
func TestReplayCommandIsWhole(t *testing.T) {
	f := newFixture(t)
	body := f.do("GET", "/clusters/aaaa1111", "", nil).Body.String()
	want := `fleetd tool call qa_compile --args '{"source":"enum E{}"}'`
	if !strings.Contains(html.UnescapeString(body), want) {
		t.Errorf("cluster page lacks %s", want)
	}
	if strings.Contains(body, "…'") {
		t.Error("the replay command is still elided")
	}

	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		repro fleet.Repro
		want  string // the arguments the shell passes on
	}{
		{fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source": "let s = 'it''s'; $(rm -rf /) ` + "`x`" + `"}`)},
			`{"source":"let s = 'it''s'; $(rm -rf /) ` + "`x`" + `"}`},
		{fleet.Repro{Tool: "qa_fetch", Args: json.RawMessage("{\n  \"url\": \"http://a/?q='\"\n}")}, `{"url":"http://a/?q='"}`},
		{fleet.Repro{Tool: "qa_report"}, ""},
		{fleet.Repro{Tool: "qa x;id", Args: json.RawMessage(`not json '`)}, `not json '`},
	} {
		cmd := replayCommand(&c.repro)
		// The shell splits the command; printf shows the words it made.
		out, err := exec.Command(sh, "-c", `printf '%s\n' `+strings.TrimPrefix(cmd, "fleetd tool call ")).Output()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		words := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if words[0] != c.repro.Tool {
			t.Errorf("%s: tool word %q", cmd, words[0])
		}
		got := ""
		if len(words) == 3 && words[1] == "--args" {
			got = words[2]
		} else if len(words) != 1 {
			t.Errorf("%s: words %q", cmd, words)
		}
		if got != c.want {
			t.Errorf("%s: args %q, want %q", cmd, got, c.want)
		}
	}
}
