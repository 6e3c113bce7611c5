package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// The read commands (findings, triage, report) keep working when the node is
// gone — after `fleetd demo` ends its in-memory chain, or during an outage —
// from what triage last stored in the data dir (<data-dir>/triage), with a
// one-line note on stderr saying so. Only an unreachable node falls back: a
// wrong chain id or a missing contract is a configuration error and stays one.

// openStoredTriage opens the data dir's triage store, or fails with a message
// saying there is none.
func (a findingsCommands) openStoredTriage() (*triage.Triage, error) {
	return triage.OpenStored(a.dataDir(), func() (triage.Config, error) { return a.triageConfig(a.fleetIdentity()) })
}

// fleetIdentity loads the fleet key named in the config, nil when there is
// none or it does not load (callers that need it load it themselves and
// report the error).
func (a findingsCommands) fleetIdentity() *chainKey {
	if f := a.cfg.Chain.FleetKeyFile; f != "" {
		if k, err := chain.LoadKey(a.cfg.resolve(f)); err == nil {
			return k
		}
	}
	return nil
}

// fromStore feeds fn the entries triage stored, after the node at c.rpc
// could not be reached (nodeErr), and says so on stderr.
func (a findingsCommands) fromStore(nodeErr error, c conn, fn func([]chain.Entry) error) error {
	t, err := a.openStoredTriage()
	if err != nil {
		return fmt.Errorf("%w (and %v)", nodeErr, err)
	}
	defer t.Close()
	n, cp, ok, err := t.ReadStored(fn)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w (and the triage store in %s is empty)", nodeErr, a.dataDir())
	}
	fmt.Fprintf(a.stderr, "fleetd: node %s unreachable: showing the %d entries triage stored when it last read the log (at block %d)\n", c.rpc, n, cp.Block)
	return nil
}

// rankStored is `fleetd triage` without a node: rank what the store holds.
func (a findingsCommands) rankStored(nodeErr error, c conn) (fleet.Report, error) {
	t, err := a.openStoredTriage()
	if err != nil {
		return fleet.Report{}, fmt.Errorf("%w (and %v)", nodeErr, err)
	}
	defer t.Close()
	if _, ok, err := t.Stored(nil); err != nil || !ok {
		return fleet.Report{}, errors.Join(nodeErr, err, fmt.Errorf("the triage store in %s is empty", a.dataDir()))
	}
	r, err := t.Rank(time.Now())
	if err != nil {
		return r, err
	}
	fmt.Fprintf(a.stderr, "fleetd: node %s unreachable: ranked the %d entries triage stored (log read at block %d)\n", c.rpc, r.Head, r.Block)
	return r, nil
}
