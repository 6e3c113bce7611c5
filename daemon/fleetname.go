package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// The fleet's name (chain.fleet_name): a name on target.registry the fleet
// identity owns, whose metadata under keccak256(FleetNameField) says which
// specialist set runs and where its kind=persona record is, so that anyone
// reading the registry finds the fleet.
const FleetNameField = "fleetd.specialists"

// MaxNameRecord bounds the metadata value fleetd reads back: the record it
// writes is about 150 bytes.
const MaxNameRecord = 1024

// NameRecord is the fleet name's metadata value, as compact JSON:
//
//	{"set":"<the set's hash>","log":"0x<FeedbackLog>","entry":<index of the kind=persona record>}
type NameRecord struct {
	Set   string `json:"set"`
	Log   string `json:"log"`
	Entry uint64 `json:"entry"`
}

func (r NameRecord) Bytes() []byte {
	b, _ := json.Marshal(r) // strings and a number: cannot fail
	return b
}

// ParseNameRecord reads the fleet name's metadata value, which whoever
// owns the name wrote: at most MaxNameRecord bytes of one JSON object with
// exactly the keys set (a persona set hash: 16 lowercase hex digits), log
// (an address) and entry. The error says what was wrong.
func ParseNameRecord(b []byte) (NameRecord, error) {
	if len(b) == 0 {
		return NameRecord{}, errors.New("no specialist set in the name's metadata")
	}
	if len(b) > MaxNameRecord {
		return NameRecord{}, fmt.Errorf("metadata value is %d bytes, at most %d", len(b), MaxNameRecord)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r NameRecord
	if err := dec.Decode(&r); err != nil {
		return NameRecord{}, fmt.Errorf("metadata value is not the specialist record: %w", err)
	}
	if dec.More() {
		return NameRecord{}, errors.New("metadata value has data after the record")
	}
	if !IsSetHash(r.Set) {
		return NameRecord{}, fmt.Errorf("metadata set %.40q is not a set hash (16 lowercase hex digits)", r.Set)
	}
	if _, err := fleet.ParseAddress(r.Log); err != nil {
		return NameRecord{}, fmt.Errorf("metadata log: %w", err)
	}
	return r, nil
}

func IsSetHash(s string) bool {
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

// ValidFleetName reports what is wrong with chain.fleet_name: it must be
// 3 to 64 lowercase letters, digits, '-', '_' or '.', and not look like a
// throwaway name (qa-…), which the cleanup of runs would release.
func ValidFleetName(s string) error {
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

// NameView is what the fleet's name on the registry says.
type NameView struct {
	Name  string
	Owner fleet.Address
	Rec   *NameRecord
	Err   string // why Rec is nil
}

// ReadFleetName reads the fleet name's owner and record. A value that is
// not a record is Err, not an error; the error is the node's.
func ReadFleetName(ctx context.Context, reg *chain.Registry, name string) (NameView, error) {
	v := NameView{Name: name}
	owner, err := reg.OwnerOf(ctx, name)
	if err != nil {
		return v, err
	}
	v.Owner = owner
	if owner.IsZero() {
		v.Err = "the name is not registered"
		return v, nil
	}
	b, err := reg.Metadata(ctx, name, chain.MetadataKey(FleetNameField))
	if err != nil {
		return v, err
	}
	r, perr := ParseNameRecord(b)
	if perr != nil {
		v.Err = perr.Error()
		return v, nil
	}
	v.Rec = &r
	return v, nil
}

// Matches reports whether the name holds want, written by the fleet
// identity (its owner).
func (v NameView) Matches(fleetAddr fleet.Address, want NameRecord) bool {
	return v.Rec != nil && v.Owner == fleetAddr && *v.Rec == want
}
