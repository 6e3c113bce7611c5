package runner

import (
	"encoding/hex"
	"maps"
	"slices"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
)

// Env is everything the tools of a run share, built by NewEnv from the
// config's values (cmd/fleetd's buildEnv loads them).
type Env struct {
	*qatools.Env
	Control *fleet.Control
	Client  *chain.Client
	// Poster is the fleet identity's road to the log (<data_dir>/outbox):
	// qa_report's Env.Reporter, the fix stage's records; nil without a
	// fleet key.
	Poster *poster.Poster
}

// Close closes the chain client.
func (e *Env) Close() {
	if e.Client != nil {
		e.Client.Close()
	}
}

// SecretKeys returns the hex private keys the run records must never hold:
// the fleet key, the sponsor and the operators' test accounts.
func (e *Env) SecretKeys() []string {
	var out []string
	keys := []*chain.Key{e.FleetKey, e.Sponsor}
	for _, role := range slices.Sorted(maps.Keys(e.Accounts)) {
		keys = append(keys, e.Accounts[role]) // operators' test accounts (target.auth.accounts)
	}
	for _, k := range keys {
		if k != nil {
			out = append(out, hex.EncodeToString(k.PrivateKey().D.FillBytes(make([]byte, 32))))
		}
	}
	return out
}
