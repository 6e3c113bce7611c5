package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// TestOnChainText: no set published, the same set, and a set that differs
// by a line, a missing and an extra specialist and the rung, each named.
func TestOnChainText(t *testing.T) {
	ps := []fleet.Persona{{Name: "smoke", Goal: "g"}, {Name: "ux", Goal: "g"}}
	set := NewSpecialistSet(ps, fleet.Observe)
	if got := OnChainText(set, nil); !strings.Contains(got, "no set published") {
		t.Errorf("none: %q", got)
	}
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if got := OnChainText(set, &Published{Set: set, Hash: set.Hash(), Index: 4, Time: at}); got != "on chain: matches (entry 4, 2026-12-06T12:00:00Z)" {
		t.Errorf("same: %q", got)
	}
	other := NewSpecialistSet([]fleet.Persona{{Name: "smoke", Goal: "changed"}, {Name: "perf"}}, fleet.Exercise)
	got := OnChainText(set, &Published{Set: other, Hash: other.Hash(), Index: 9, Time: at})
	for _, want := range []string{"DIFFERS from entry 9", "differs: smoke", "running, not published: ux", "published, not running: perf", "dial: observe running, exercise published"} {
		if !strings.Contains(got, want) {
			t.Errorf("differs: %q lacks %q", got, want)
		}
	}
}

// TestNameText: each state of the fleet's name is said as it is.
func TestNameText(t *testing.T) {
	fleetAddr, _ := fleet.ParseAddress("0x00000000000000000000000000000000000000f1")
	stranger, _ := fleet.ParseAddress("0x00000000000000000000000000000000000000e2")
	want := &NameRecord{Set: "abc", Log: "0xlog", Entry: 3}
	for _, tt := range []struct {
		v    NameView
		want *NameRecord
		says string
	}{
		{NameView{Name: "qa"}, want, "not registered"},
		{NameView{Name: "qa", Owner: stranger}, want, "owned by " + stranger.String()},
		{NameView{Name: "qa", Owner: fleetAddr, Err: "not a record"}, want, "not a record"},
		{NameView{Name: "qa", Owner: fleetAddr, Rec: &NameRecord{Set: "abc", Log: "0xlog", Entry: 3}}, want, "matches (set abc, log entry 3)"},
		{NameView{Name: "qa", Owner: fleetAddr, Rec: &NameRecord{Set: "old", Log: "0xlog", Entry: 1}}, want, "DIFFERS: holds set old, log entry 1 of 0xlog"},
		{NameView{Name: "qa", Owner: fleetAddr, Rec: &NameRecord{Set: "abc", Log: "0xlog", Entry: 3}}, nil, "DIFFERS"},
	} {
		if got := NameText(tt.v, fleetAddr, tt.want); !strings.HasPrefix(got, `name "qa": `) || !strings.Contains(got, tt.says) {
			t.Errorf("%+v: %q, want %q", tt.v, got, tt.says)
		}
	}
}
