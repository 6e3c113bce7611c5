package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// The fleet's name (chain.fleet_name): a name on target.registry the fleet
// identity owns, whose metadata under keccak256(fleetNameField) says which
// specialist set runs and where its kind=persona record is, so that anyone
// reading the registry finds the fleet.
const fleetNameField = "fleetd.specialists"

// maxNameRecord bounds the metadata value fleetd reads back: the record it
// writes is about 150 bytes.
const maxNameRecord = 1024

// nameRecord is the fleet name's metadata value, as compact JSON:
//
//	{"set":"<the set's hash>","log":"0x<FeedbackLog>","entry":<index of the kind=persona record>}
type nameRecord struct {
	Set   string `json:"set"`
	Log   string `json:"log"`
	Entry uint64 `json:"entry"`
}

func (r nameRecord) bytes() []byte {
	b, _ := json.Marshal(r) // strings and a number: cannot fail
	return b
}

// parseNameRecord reads the fleet name's metadata value, which whoever
// owns the name wrote: at most maxNameRecord bytes of one JSON object with
// exactly the keys set (a persona set hash: 16 lowercase hex digits), log
// (an address) and entry. The error says what was wrong.
func parseNameRecord(b []byte) (nameRecord, error) {
	if len(b) == 0 {
		return nameRecord{}, errors.New("no specialist set in the name's metadata")
	}
	if len(b) > maxNameRecord {
		return nameRecord{}, fmt.Errorf("metadata value is %d bytes, at most %d", len(b), maxNameRecord)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r nameRecord
	if err := dec.Decode(&r); err != nil {
		return nameRecord{}, fmt.Errorf("metadata value is not the specialist record: %w", err)
	}
	if dec.More() {
		return nameRecord{}, errors.New("metadata value has data after the record")
	}
	if !isSetHash(r.Set) {
		return nameRecord{}, fmt.Errorf("metadata set %.40q is not a set hash (16 lowercase hex digits)", r.Set)
	}
	if _, err := fleet.ParseAddress(r.Log); err != nil {
		return nameRecord{}, fmt.Errorf("metadata log: %w", err)
	}
	return r, nil
}

func isSetHash(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validFleetName reports what is wrong with chain.fleet_name: it must be
// 3 to 64 lowercase letters, digits, '-', '_' or '.', and not look like a
// throwaway name (qa-…), which the cleanup of runs would release.
func validFleetName(s string) error {
	if len(s) < 3 || len(s) > 64 {
		return fmt.Errorf("%q: want 3 to 64 characters", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return fmt.Errorf("%q: only lowercase letters, digits, '-', '_' and '.'", s)
		}
	}
	if strings.HasPrefix(s, "qa-") {
		return fmt.Errorf("%q: qa- names are the runs' throwaway names", s)
	}
	return nil
}

// nameView is what the fleet's name on the registry says.
type nameView struct {
	Name  string
	Owner fleet.Address
	Rec   *nameRecord
	Err   string // why Rec is nil
}

// readFleetName reads the fleet name's owner and record. A value that is
// not a record is Err, not an error; the error is the node's.
func readFleetName(ctx context.Context, reg *chain.Registry, name string) (nameView, error) {
	v := nameView{Name: name}
	owner, err := reg.OwnerOf(ctx, name)
	if err != nil {
		return v, err
	}
	v.Owner = owner
	if owner.IsZero() {
		v.Err = "the name is not registered"
		return v, nil
	}
	b, err := reg.Metadata(ctx, name, chain.MetadataKey(fleetNameField))
	if err != nil {
		return v, err
	}
	r, perr := parseNameRecord(b)
	if perr != nil {
		v.Err = perr.Error()
		return v, nil
	}
	v.Rec = &r
	return v, nil
}

// matches reports whether the name holds want, written by the fleet
// identity (its owner).
func (v nameView) matches(fleetAddr fleet.Address, want nameRecord) bool {
	return v.Rec != nil && v.Owner == fleetAddr && *v.Rec == want
}

// publishName writes want into the fleet's name when it does not hold it
// already, registering the name first when it is free, the sponsor
// topping up the fleet identity (which holds no funds otherwise) for the
// gas. It returns whether the name holds want, or why not. The chain
// client's write guard applies: at observe nothing is written.
func (d *daemon) publishName(ctx context.Context, name string, want nameRecord) (bool, error) {
	env := d.env
	if env.Registry == nil {
		return false, errors.New("no target.registry")
	}
	fleetAddr := env.FleetKey.Address()
	v, err := readFleetName(ctx, env.Registry, name)
	if err != nil {
		return false, fmt.Errorf("read the name %q: %w", name, err)
	}
	if v.matches(fleetAddr, want) {
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
	if _, err := env.Registry.SetMetadata(ctx, env.FleetKey, name, chain.MetadataKey(fleetNameField), want.bytes()); err != nil {
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
func nameText(v nameView, fleetAddr fleet.Address, want *nameRecord) string {
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
