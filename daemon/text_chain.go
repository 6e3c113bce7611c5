package daemon

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// The texts `fleetd specialists --on-chain` prints of the published set and
// the fleet's name.

// OnChainText says how the running set compares with the published one.
func OnChainText(set SpecialistSet, pub *Published) string {
	if pub == nil {
		return fmt.Sprintf("on chain: no set published by the fleet identity in the log's newest %d entries (the daemon publishes it at start)", MaxPersonaScan)
	}
	if pub.Hash == set.Hash() {
		return fmt.Sprintf("on chain: matches (entry %d, %s)", pub.Index, pub.Time.UTC().Format(time.RFC3339))
	}
	var diff []string
	have := map[string]SpecialistLine{}
	for _, l := range pub.Set.Lines {
		have[l.Name] = l
	}
	for _, l := range set.Lines {
		p, ok := have[l.Name]
		switch {
		case !ok:
			diff = append(diff, "  running, not published: "+l.Name)
		case p != l:
			diff = append(diff, fmt.Sprintf("  differs: %s (published: %s)", l, p))
		}
		delete(have, l.Name)
	}
	for name := range have {
		diff = append(diff, "  published, not running: "+name)
	}
	slices.Sort(diff)
	if pub.Set.Rung != set.Rung {
		diff = append(diff, fmt.Sprintf("  dial: %s running, %s published", set.Rung, pub.Set.Rung))
	}
	return fmt.Sprintf("on chain: DIFFERS from entry %d (%s):\n%s", pub.Index, pub.Time.UTC().Format(time.RFC3339), strings.Join(diff, "\n"))
}

// NameText says how the fleet's name compares with want (nil: no set is
// published on the log, so the name cannot match).
func NameText(v NameView, fleetAddr fleet.Address, want *NameRecord) string {
	head := fmt.Sprintf("name %q: ", v.Name)
	switch {
	case v.Owner.IsZero():
		return head + "not registered (the daemon claims it at exercise)"
	case v.Owner != fleetAddr:
		return head + fmt.Sprintf("owned by %s, not the fleet identity %s", v.Owner, fleetAddr)
	case v.Rec == nil:
		return head + v.Err
	case want != nil && *v.Rec == *want:
		return head + fmt.Sprintf("matches (set %s, log entry %d)", v.Rec.Set, v.Rec.Entry)
	}
	return head + fmt.Sprintf("DIFFERS: holds set %s, log entry %d of %s", v.Rec.Set, v.Rec.Entry, v.Rec.Log)
}
