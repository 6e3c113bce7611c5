package fleet

import (
	"testing"
	"time"
)

// TestTriggerRenderings: the one place a trigger is written out, in words
// for people and as a token for the published set of specialists.
func TestTriggerRenderings(t *testing.T) {
	for _, c := range []struct {
		t          Trigger
		words, tok string
	}{
		{Trigger{}, "manual only", "none"},
		{Trigger{Cron: "0 */6 * * *"}, "cron 0 */6 * * *", "cron:0_*/6_*_*_*"},
		{Trigger{Every: 40 * time.Second, Events: []string{"name_registered", "code_changed"}}, "every 40s; on name_registered, code_changed", "every:40s+events:code_changed,name_registered"},
		{Trigger{Continuous: true}, "continuous", "continuous"},
		{Trigger{Events: []string{"feedback"}}, "on feedback", "none+events:feedback"},
		{Trigger{Cron: "@hourly", Every: time.Minute}, "cron @hourly", "cron:@hourly"},
	} {
		if got := c.t.String(); got != c.words {
			t.Errorf("%+v.String() = %q, want %q", c.t, got, c.words)
		}
		if got := c.t.Token(); got != c.tok {
			t.Errorf("%+v.Token() = %q, want %q", c.t, got, c.tok)
		}
	}
}
