package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Name states in the ledger.
const (
	StateMinting  = "minting"  // recorded; the mint transaction may or may not have landed
	StateMinted   = "minted"   // the mint landed
	StateFailed   = "failed"   // the mint reverted or was refused: nothing to release
	StateReleased = "released" // given back
)

// LedgerEntry is one name the run minted (or tried to).
type LedgerEntry struct {
	Name    string    `json:"name"`
	Owner   string    `json:"owner,omitempty"`    // throwaway key address
	KeyFile string    `json:"key_file,omitempty"` // file name in keys/
	State   string    `json:"state"`
	At      time.Time `json:"at"`
	// ReleaseError is why the last cleanup could not release the name
	// (it stays minted, its key funded, for reconcile); ReleaseAttempts
	// counts the tries of every cleanup so far.
	ReleaseError    string `json:"release_error,omitempty"`
	ReleaseAttempts int    `json:"release_attempts,omitempty"`
	// FundingNonce is the sponsor's nonce of the transaction funding the
	// key, recorded before it was sent: until the sponsor's mined nonce
	// passes it the funding may still land (a node journals what it
	// accepted and mines it after a restart), so cleanup does not call the
	// key empty before then. Nil in ledgers of older fleetd.
	FundingNonce *uint64 `json:"funding_nonce,omitempty"`
	// MintNonce is the key's nonce of the mint (the register transaction),
	// recorded before it was sent, for the same reason: a mint whose answer
	// was lost, or whose wait the run's end cancelled, may land after
	// cleanup looked, so an unowned name is not called never minted until
	// the key's mined nonce passes it. Nil in ledgers of older fleetd.
	MintNonce *uint64 `json:"mint_nonce,omitempty"`
}

// Ledger records every name a run mints. Reserve writes the name durably
// before the caller sends the mint, so a crash mid-mint can never leave a
// name nobody knows to release.
type Ledger struct {
	mu      sync.Mutex
	path    string
	prefix  string
	entries []LedgerEntry
}

// ErrNotOwned is returned when a name is not one this run minted.
var ErrNotOwned = errors.New("name not minted by this run")

func openLedger(path, runID string) (*Ledger, error) {
	l := &Ledger{path: path, prefix: NamePrefix(runID)}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &l.entries); err != nil {
		return nil, fmt.Errorf("ledger %s: %w", path, err)
	}
	return l, nil
}

// NamePrefix is the prefix of every name run runID may mint: qa-<run>-.
func NamePrefix(runID string) string { return "qa-" + runID + "-" }

// Reserve records the next name qa-<run>-<n> as minting, for the throwaway
// key with address owner stored in keys/keyFile, and returns it once the
// ledger is on disk.
func (l *Ledger) Reserve(owner, keyFile string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := fmt.Sprintf("%s%d", l.prefix, len(l.entries))
	l.entries = append(l.entries, LedgerEntry{Name: name, Owner: owner, KeyFile: keyFile, State: StateMinting, At: time.Now().UTC()})
	if err := l.saveLocked(); err != nil {
		l.entries = l.entries[:len(l.entries)-1]
		return "", err
	}
	return name, nil
}

// SetState records a new state for a name this run reserved.
func (l *Ledger) SetState(name, state string) error {
	return l.update(name, func(e *LedgerEntry) { e.State = state })
}

// NoteRelease records a cleanup's attempts to release name and, when
// they failed, why (an empty reason clears it). The state is unchanged: a
// name whose release failed is still minted, so reconcile releases it.
func (l *Ledger) NoteRelease(name string, attempts int, reason string) error {
	return l.update(name, func(e *LedgerEntry) { e.ReleaseAttempts += attempts; e.ReleaseError = reason })
}

// NoteFunding records, durably, that the transaction funding name's key
// with the sponsor's nonce may land from now on (LedgerEntry.FundingNonce);
// nil withdraws it (the node refused the funding: it cannot land).
func (l *Ledger) NoteFunding(name string, nonce *uint64) error {
	return l.update(name, func(e *LedgerEntry) { e.FundingNonce = nonce })
}

// NoteMint records, durably, that name's mint with its key's nonce may
// land from now on (LedgerEntry.MintNonce); nil withdraws it (the node
// refused the mint: it cannot land).
func (l *Ledger) NoteMint(name string, nonce *uint64) error {
	return l.update(name, func(e *LedgerEntry) { e.MintNonce = nonce })
}

// update applies set to name's entry, stamps it and saves the ledger.
func (l *Ledger) update(name string, set func(*LedgerEntry)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.entries {
		if l.entries[i].Name == name {
			set(&l.entries[i])
			l.entries[i].At = time.Now().UTC()
			return l.saveLocked()
		}
	}
	return fmt.Errorf("ledger: %q: %w", name, ErrNotOwned)
}

// Owned returns the entry for name if this run minted it and has not
// released it: the name must carry this run's prefix and be in the ledger.
// Both checks are needed: a look-alike name from another run fails the
// first, a guessed name with the right prefix fails the second.
func (l *Ledger) Owned(name string) (LedgerEntry, error) {
	if !strings.HasPrefix(name, l.prefix) {
		return LedgerEntry{}, fmt.Errorf("%q: %w (this run's names start with %q)", name, ErrNotOwned, l.prefix)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.Name != name {
			continue
		}
		if e.State == StateMinted || e.State == StateMinting {
			return e, nil
		}
		return LedgerEntry{}, fmt.Errorf("%q: %w (it is %s)", name, ErrNotOwned, e.State)
	}
	return LedgerEntry{}, fmt.Errorf("%q: %w (not in this run's ledger)", name, ErrNotOwned)
}

// Entries returns a copy of the ledger in mint order.
func (l *Ledger) Entries() []LedgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LedgerEntry(nil), l.entries...)
}

// Unreleased returns the names that may still be registered on chain.
func (l *Ledger) Unreleased() []LedgerEntry {
	var out []LedgerEntry
	for _, e := range l.Entries() {
		if e.State == StateMinted || e.State == StateMinting {
			out = append(out, e)
		}
	}
	return out
}

func (l *Ledger) save() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.saveLocked()
}

// saveLocked writes the ledger atomically and durably (temp file, fsync,
// rename, fsync of the directory).
func (l *Ledger) saveLocked() error {
	b, err := json.MarshalIndent(l.entries, "", "  ")
	if err != nil {
		return err
	}
	if l.entries == nil {
		b = []byte("[]")
	}
	if err := fleet.WriteFileAtomic(l.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}
