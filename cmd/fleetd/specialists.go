package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/qafleet/fleetd/chain"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
)

// onChain prints (or adds to out, for --json) how the running set compares
// with the newest one the fleet identity published; it returns an
// exitError (1) when they differ or none is published.
func (a specialistCommands) onChain(ctx context.Context, set fleetdaemon.SpecialistSet, asJSON bool) error {
	env, err := a.buildEnv(ctx, a.warnLogger())
	if err != nil {
		if errors.Is(err, chain.ErrUnreachable) {
			return &exitError{code: exitInfra, err: err}
		}
		return &exitError{code: exitConfig, err: err}
	}
	defer env.Close()
	if env.Log == nil || env.FleetKey == nil {
		return &exitError{code: exitConfig, err: errors.New("--on-chain needs chain.feedback_log and chain.fleet_key_file")}
	}
	pub, err := fleetdaemon.NewestPublished(ctx, env.Log, env.FleetKey.Address())
	if err != nil {
		return &exitError{code: exitInfra, err: fmt.Errorf("reading the log: %w", err)}
	}
	matches := pub != nil && pub.Hash == set.Hash()
	// The fleet's name, when configured, must hold the same set and point
	// at the same record.
	var name *fleetdaemon.NameView
	nameMatches := true
	if n := a.cfg.Chain.FleetName; n != "" {
		if env.Registry == nil {
			return &exitError{code: exitConfig, err: errors.New("chain.fleet_name needs target.registry")}
		}
		v, err := fleetdaemon.ReadFleetName(ctx, env.Registry, n)
		if err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("reading the fleet's name: %w", err)}
		}
		name = &v
		nameMatches = pub != nil && v.Matches(env.FleetKey.Address(), fleetdaemon.NameRecord{Set: set.Hash(), Log: env.Log.Address().String(), Entry: pub.Index})
	}
	var want *fleetdaemon.NameRecord
	if pub != nil {
		want = &fleetdaemon.NameRecord{Set: set.Hash(), Log: env.Log.Address().String(), Entry: pub.Index}
	}
	if asJSON {
		out := map[string]any{"set": set.Hash(), "rung": set.Rung, "specialists": set.Lines, "published": pub != nil, "matches": matches && nameMatches}
		if pub != nil {
			out["on_chain"] = map[string]any{"set": pub.Hash, "entry": pub.Index, "time": pub.Time, "rung": pub.Set.Rung, "specialists": pub.Set.Lines}
		}
		if name != nil {
			nm := map[string]any{"name": name.Name, "owner": name.Owner, "matches": nameMatches}
			if name.Rec != nil {
				nm["set"], nm["log"], nm["entry"] = name.Rec.Set, name.Rec.Log, name.Rec.Entry
			} else {
				nm["error"] = name.Err
			}
			out["name"] = nm
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "running set %s (%d specialists, dial %s)\n%s\n", set.Hash(), len(set.Lines), set.Rung, fleetdaemon.OnChainText(set, pub))
		if name != nil {
			fmt.Fprintln(a.stdout, fleetdaemon.NameText(*name, env.FleetKey.Address(), want))
		}
	}
	if !matches {
		return &exitError{code: exitInfra, err: errors.New("the running specialists are not the ones published on the log")}
	}
	if !nameMatches {
		return &exitError{code: exitInfra, err: fmt.Errorf("the fleet's name %q does not hold the set published on the log", name.Name)}
	}
	return nil
}
