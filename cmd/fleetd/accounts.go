package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// loadAccounts reads target.auth.accounts' key files (issue 33): the test
// accounts operators give fleetd by role. chain.LoadKey refuses a file
// other users can read and never echoes its contents.
func loadAccounts(auth *fleet.Auth, resolve func(string) string) (map[string]*chain.Key, error) {
	if auth == nil || len(auth.Accounts) == 0 {
		return nil, nil
	}
	out := map[string]*chain.Key{}
	for _, role := range slices.Sorted(maps.Keys(auth.Accounts)) {
		k, err := chain.LoadKey(resolve(auth.Accounts[role]))
		if err != nil {
			return nil, fmt.Errorf("target.auth.accounts.%s: %w", role, err)
		}
		out[role] = k
	}
	return out, nil
}
