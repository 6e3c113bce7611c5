package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// KeyState is the qa/v1 header key holding a finding's crash state id:
// what bug it is, independent of the input that showed it. A crash of the
// same kind at the same place found with two inputs (or minimized to two
// inputs) carries one state= and therefore one fingerprint. The header
// value is StateID of a readable state (for a crash: the message with
// literals masked and the top frames of the target; for a hang: the shape
// of its minimized input), because a header value may not hold spaces.
const KeyState = "state"

// StateID returns the header value for a readable crash state: 16
// lowercase hex digits, the first 64 bits of SHA-256 over the state with
// whitespace runs collapsed. "" for an empty state.
func StateID(state string) string {
	state = strings.Join(strings.Fields(state), " ")
	if state == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:8])
}

// State returns the finding's state= header value, lowercased, or "".
func (f Finding) State() string {
	for _, x := range f.Extra {
		if x.Key == KeyState {
			return strings.ToLower(x.Value)
		}
	}
	return ""
}

// WithState returns a copy of f whose header carries state=id (replacing
// any state= it had; an empty id removes it).
func (f Finding) WithState(id string) Finding {
	extra := make([]Field, 0, len(f.Extra)+1)
	for _, x := range f.Extra {
		if x.Key != KeyState {
			extra = append(extra, x)
		}
	}
	if id != "" {
		extra = append(extra, Field{Key: KeyState, Value: id})
	}
	f.Extra = extra
	return f
}
