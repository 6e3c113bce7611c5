package daemon

import (
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// FuzzParseSpecialistSet: whatever an entry says, reading it as a set
// never panics, and a set it accepts formats to a record that fits the log.
func FuzzParseSpecialistSet(f *testing.F) {
	ps := []fleet.Persona{
		{Name: "smoke", Goal: "answers", Prompt: "p", Tools: []string{"qa_fetch", "qa_call"}, Trigger: fleet.Trigger{Every: time.Hour}},
		{Name: "fuzz", Goal: "crashes", Planner: fleet.PlannerGemini, Trigger: fleet.Trigger{Continuous: true, Events: []string{"code_changed"}}},
	}
	text, _ := NewSpecialistSet(ps, fleet.Observe).Text()
	f.Add(text)
	f.Add("qa/v1 source=qa-fleet sev=meta surface=fleet kind=persona ref=x\nThe fleet's specialists: 1 at dial observe.\na tools=b trigger=c planner=d persona=e")
	f.Fuzz(func(t *testing.T, s string) {
		set, _, ok := ParseSpecialistSet(s)
		if !ok {
			return
		}
		if len(set.Lines) > 200 {
			return
		}
		if _, err := set.Text(); err != nil && len(s) < chain.MaxText {
			t.Errorf("an accepted set does not format: %v", err)
		}
	})
}

// TestSpecialistSetReadsBack: a published set reads back as the same set
// (lines, rung, hash); another kind of entry is not a set; a changed
// prompt, tool list or rung is a different set.
func TestSpecialistSetReadsBack(t *testing.T) {
	ps := []fleet.Persona{
		{Name: "ux", Goal: "docs hold", Prompt: "read", Tools: []string{"qa_fetch"}, Trigger: fleet.Trigger{Cron: "0 * * * *"}},
		{Name: "smoke", Goal: "answers", Prompt: "p", Tools: []string{"qa_fetch", "qa_call"}, Trigger: fleet.Trigger{Every: time.Hour}},
	}
	set := NewSpecialistSet(ps, fleet.Exercise)
	text, err := set.Text()
	if err != nil {
		t.Fatal(err)
	}
	got, hash, ok := ParseSpecialistSet(text)
	if !ok || hash != set.Hash() || got.Rung != "exercise" || len(got.Lines) != 2 || got.Hash() != set.Hash() || got.Lines[0].Name != "smoke" {
		t.Fatalf("round trip: ok=%v hash %s want %s, %+v\n%s", ok, hash, set.Hash(), got, text)
	}
	if got.Lines[1].Trigger != "cron:0_*_*_*_*" || got.Lines[0].Tools != "qa_call,qa_fetch" {
		t.Errorf("lines %+v", got.Lines)
	}
	for _, other := range []string{"qa/v1 source=qa-triage sev=meta surface=fleet kind=meta\nsummary", "free text", ""} {
		if _, _, ok := ParseSpecialistSet(other); ok {
			t.Errorf("%q read as a set", other)
		}
	}
	ps[0].Prompt += " More."
	if NewSpecialistSet(ps, fleet.Exercise).Hash() == set.Hash() || NewSpecialistSet(ps[:1], fleet.Exercise).Hash() == set.Hash() ||
		NewSpecialistSet(ps, fleet.Observe).Hash() == NewSpecialistSet(ps, fleet.Exercise).Hash() {
		t.Error("a changed set keeps its hash")
	}
}
