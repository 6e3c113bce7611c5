package main

import (
	"fmt"

	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
)

// nameText says how the fleet's name compares with want (nil: no set is
// published on the log, so the name cannot match).
func nameText(v fleetdaemon.NameView, fleetAddr fleet.Address, want *fleetdaemon.NameRecord) string {
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

// validFleetName is daemon.ValidFleetName, for the config's check.
var validFleetName = fleetdaemon.ValidFleetName
