package specialists

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/qafleet/fleetd/fixtures/registries"
	"github.com/qafleet/fleetd/fleet"
)

// TestPropertiesParse: the embedded properties are valid, and a broken
// file is refused with the file and the field named.
func TestPropertiesParse(t *testing.T) {
	props, err := DefaultProperties()
	if err != nil || len(props) < 5 {
		t.Fatalf("embedded properties: %d, %v", len(props), err)
	}
	for _, tc := range []struct{ file, want string }{
		{"property: x\nversion: 1\nclaim: c\nseverity: high\nsteps: [{as: dave, call: \"f()\", args: [], expect: success}]\n", "steps[0].as"},
		{"property: x\nversion: 1\nclaim: c\nseverity: high\nsteps: [{as: bob, call: \"f(uint7)\", args: [\"1\"], expect: success}]\n", "steps[0].call"},
		{"property: x\nversion: 1\nclaim: c\nseverity: high\nsteps: [{as: bob, call: \"f(string)\", args: [\"{who}\"], expect: success}]\n", "unknown placeholder {who}"},
		{"property: x\nversion: 1\nclaim: c\nseverity: high\nsteps: [{as: bob, call: \"f()\", args: [], expect: revert, address: \"{bob}\"}]\n", "needs expect: success"},
		{"property: x\nversion: 1\nclaim: c\nseverity: meta\nsteps: []\n", "severity"},
		{"property: x\nversion: 1\nclaim: c\nseverity: high\nextra: 1\nsteps: []\n", "field extra not found"},
		{"property: [\n", "yaml"},
	} {
		if _, err := ParseProperty("p.yaml", []byte(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "p.yaml") {
			t.Errorf("ParseProperty(%q) = %v, want an error naming p.yaml and %q", tc.file, err, tc.want)
		}
	}
	fsys := fstest.MapFS{"p/a.yaml": {Data: []byte("property: [\n")}}
	if _, err := LoadProperties(fsys, "p"); err == nil || !strings.Contains(err.Error(), "p/a.yaml") {
		t.Errorf("LoadProperties with a broken file: %v", err)
	}
}

// FuzzParseProperty: property files never panic the parser.
func FuzzParseProperty(f *testing.F) {
	b, _ := propertyFS.ReadFile("invariants/released-name-is-clean.yaml")
	f.Add(b)
	f.Add([]byte("property: x\nsteps: [{as: bob, call: \"f(bytes32)\", args: [\"{name}\"]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pr, err := ParseProperty("f.yaml", data)
		if err == nil && len(pr.Steps) == 0 {
			t.Fatal("a property without steps accepted")
		}
	})
}

// TestInvariantsTwins: the flawed curator registry breaks "a released name
// is clean" (its next holder inherits the old metadata), found by a
// simulated sequence of throwaway actors; the correct twin keeps every
// property; nothing is written either way.
func TestInvariantsTwins(t *testing.T) {
	cw := startChainWorld(t, false)
	for _, twin := range []registries.Twin{registries.Flawed, registries.Correct} {
		addr, err := registries.Deploy(context.Background(), cw.c, cw.sponsor, twin)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(twin.String(), func(t *testing.T) {
			head, _, _, _ := cw.c.Head(context.Background())
			w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{"qa_chain": cw.qaChain}}
			st := fleet.State{RunID: "r-inv", Target: fleet.Target{Registry: addr.String()}, Tools: toolList("qa_chain", "qa_report")}
			_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 200)
			t.Log(summaries(w.reports))
			broken := findReport(w.reports, "invariant broken", "released name")
			switch {
			case twin == registries.Flawed && (broken == nil || broken["severity"] != "high"):
				t.Errorf("the flawed twin's broken invariant not reported at high:%s\n%s", summaries(w.reports), summary)
			case twin == registries.Correct && findReport(w.reports, "invariant broken") != nil:
				t.Errorf("the correct twin breaks an invariant:%s", summaries(w.reports))
			}
			if !strings.Contains(summary, "invariants: 4 properties checked") {
				t.Errorf("want four applicable properties checked: %s", summary)
			}
			if after, _, _, _ := cw.c.Head(context.Background()); after != head {
				t.Errorf("the checks wrote blocks: head %d -> %d", head, after)
			}
		})
	}
}
