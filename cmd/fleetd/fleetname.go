package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/qafleet/fleetd/chain"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
)

// publishName writes want into the fleet's name when it does not hold it
// already, registering the name first when it is free, the sponsor
// topping up the fleet identity (which holds no funds otherwise) for the
// gas. It returns whether the name holds want, or why not. The chain
// client's write guard applies: at observe nothing is written.
func (d *daemon) publishName(ctx context.Context, name string, want fleetdaemon.NameRecord) (bool, error) {
	env := d.env
	if env.Registry == nil {
		return false, errors.New("no target.registry")
	}
	fleetAddr := env.FleetKey.Address()
	v, err := fleetdaemon.ReadFleetName(ctx, env.Registry, name)
	if err != nil {
		return false, fmt.Errorf("read the name %q: %w", name, err)
	}
	if v.Matches(fleetAddr, want) {
		return true, nil
	}
	if !v.Owner.IsZero() && v.Owner != fleetAddr {
		return false, fmt.Errorf("the name %q is owned by %s, not the fleet identity %s", name, v.Owner, fleetAddr)
	}
	if rung, _ := env.Control.Dial(); !rung.Allows(fleet.Exercise) {
		return false, fmt.Errorf("not written: the dial is %s (no on-chain write but feedback)", rung)
	}
	if err := d.fundFleet(ctx); err != nil {
		return false, err
	}
	if v.Owner.IsZero() {
		if _, err := env.Registry.Register(ctx, env.FleetKey, name); err != nil {
			return false, fmt.Errorf("register the name %q: %w", name, err)
		}
		d.log.Info("registered the fleet's name", "name", name)
	}
	if _, err := env.Registry.SetMetadata(ctx, env.FleetKey, name, chain.MetadataKey(fleetdaemon.FleetNameField), want.Bytes()); err != nil {
		return false, fmt.Errorf("write the name %q: %w", name, err)
	}
	d.log.Info("wrote the specialist set into the fleet's name", "name", name, "set", want.Set, "entry", want.Entry)
	return true, nil
}

// fundFleet has the sponsor top the fleet identity up to tools.fund_wei
// when it holds less than half of it (a registration and a metadata write
// on today's dev fork cost well under that).
func (d *daemon) fundFleet(ctx context.Context) error {
	env := d.env
	fund := new(big.Int).SetUint64(env.Limits.FundWei)
	if fund.Sign() == 0 {
		fund.SetUint64(10_000_000_000_000_000)
	}
	bal, err := env.Chain.Balance(ctx, env.FleetKey.Address())
	if err != nil {
		return fmt.Errorf("fleet identity's balance: %w", err)
	}
	if new(big.Int).Mul(bal, big.NewInt(2)).Cmp(fund) >= 0 {
		return nil
	}
	if env.Sponsor == nil {
		return errors.New("the fleet identity holds no funds for the name's gas and there is no chain.sponsor_key_file")
	}
	if _, err := env.Chain.Transfer(ctx, env.Sponsor, env.FleetKey.Address(), new(big.Int).Sub(fund, bal)); err != nil {
		return fmt.Errorf("sponsor tops up the fleet identity: %w", err)
	}
	return nil
}

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
