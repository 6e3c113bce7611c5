package specialists

import (
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixtures/testbed"
)

// TestListsHoldNoFixtureNames: the general rules' lists are the field's,
// not the fixtures': neither the testbed's admin functions nor the
// identity names the testbed and Quarry trust are on them. That the
// testbed's flaws are still found with its names off the lists (learned
// from its docs, the signatures its pages show and target.admin_functions)
// is what TestTestbedHTTPSurfaces ("S4 spoofed header", X-Caller from
// its docs) and TestTestbedChainRules (the unguarded adminBurn(string[]),
// critical) attack; TestEvalTricks does the same for Quarry's names.
func TestListsHoldNoFixtureNames(t *testing.T) {
	for _, f := range testbed.AdminFunctions {
		if slices.Contains(knownSignatures, f) || slices.Contains(platformPublic, f) || slices.Contains(platformReads, f) {
			t.Errorf("the testbed's admin function %s is on a general list", f)
		}
	}
	for _, h := range []string{"X-Caller", "X-Quarry-Principal"} {
		if slices.ContainsFunc(identityHeaders, func(x string) bool { return strings.EqualFold(x, h) }) {
			t.Errorf("the fixture header %s is on identityHeaders", h)
		}
	}
	// The lists still hold what the field uses most, first.
	if identityHeaders[0] != "X-Forwarded-User" || knownSignatures[0] != "transferOwnership(address)" {
		t.Errorf("the lists do not start with the field's most common names: %s, %s", identityHeaders[0], knownSignatures[0])
	}
}
