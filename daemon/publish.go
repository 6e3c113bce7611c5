package daemon

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// publishSpecialists posts the running set when it differs from the newest
// one on the log (a no-op without a log, a fleet key or a poster). Errors
// are logged: publishing never stops the daemon.
func (d *Daemon) publishSpecialists(ctx context.Context) {
	env := d.env
	if env == nil || env.Log == nil || env.FleetKey == nil || env.Poster == nil || d.snap.Load().personas == nil {
		return // not the daemon (fleetd mcp recovers crashed runs with it too), or no log to publish on
	}
	ps := d.snap.Load().personaList()
	rung, _ := env.Control.Dial()
	set := NewSpecialistSet(ps, rung)
	st := &console.PublishedSet{Set: set.Hash(), Checked: time.Now()}
	defer d.published.Store(st)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pub, err := NewestPublished(cctx, env.Log, env.FleetKey.Address())
	if err != nil {
		st.Error = "the log could not be read: " + err.Error()
		d.log.Warn("specialists not published: the log could not be read", "err", err)
		return
	}
	if pub != nil && pub.Hash == set.Hash() {
		st.Matches, st.Entry, st.Time = true, pub.Index, pub.Time
		d.publishNameOf(cctx, st)
		return
	}
	text, err := set.Text()
	if err == nil {
		var res poster.Result
		if res, err = env.Poster.Post(cctx, poster.Record{Text: text, Source: PersonaSource, Keying: poster.ByText}); err == nil {
			d.log.Info("published the fleet's specialists", "set", set.Hash(), "specialists", len(set.Lines), "status", string(res.Status))
			if res.Status == poster.Posted {
				st.Matches, st.Time = true, time.Now()
				if res.Entry != nil {
					st.Entry = res.Entry.Index
					d.publishNameOf(cctx, st)
				}
			} else {
				st.Error = "the record is " + string(res.Status)
			}
			return
		}
	}
	st.Error = err.Error()
	d.log.Error("specialists not published", "err", err)
}

// publishNameOf writes the set st says is on the log into the fleet's
// name (chain.fleet_name), when one is configured, and notes the outcome
// in st.
func (d *Daemon) publishNameOf(ctx context.Context, st *console.PublishedSet) {
	name := d.cfg().FleetName
	if name == "" {
		return
	}
	st.Name = name
	ok, err := d.publishName(ctx, name, NameRecord{Set: st.Set, Log: d.env.Log.Address().String(), Entry: st.Entry})
	st.NameMatches = ok
	if err != nil {
		st.NameError = err.Error()
		d.log.Warn("the fleet's name does not hold the specialist set", "name", name, "err", err)
	}
}

// personaList is the snapshot's personas, by name.
func (s *Snapshot) personaList() []fleet.Persona {
	m := s.personas
	out := make([]fleet.Persona, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b fleet.Persona) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// publishName writes want into the fleet's name when it does not hold it
// already, registering the name first when it is free, the sponsor
// topping up the fleet identity (which holds no funds otherwise) for the
// gas. It returns whether the name holds want, or why not. The chain
// client's write guard applies: at observe nothing is written.
func (d *Daemon) publishName(ctx context.Context, name string, want NameRecord) (bool, error) {
	env := d.env
	if env.Registry == nil {
		return false, errors.New("no target.registry")
	}
	fleetAddr := env.FleetKey.Address()
	v, err := ReadFleetName(ctx, env.Registry, name)
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
	if _, err := env.Registry.SetMetadata(ctx, env.FleetKey, name, chain.MetadataKey(FleetNameField), want.Bytes()); err != nil {
		return false, fmt.Errorf("write the name %q: %w", name, err)
	}
	d.log.Info("wrote the specialist set into the fleet's name", "name", name, "set", want.Set, "entry", want.Entry)
	return true, nil
}

// fundFleet has the sponsor top the fleet identity up to tools.fund_wei
// when it holds less than half of it (a registration and a metadata write
// on today's dev fork cost well under that).
func (d *Daemon) fundFleet(ctx context.Context) error {
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
