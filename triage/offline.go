package triage

import (
	"fmt"
	"os"
	"path/filepath"
)

// The read commands (findings, triage, report) keep working when the node
// is gone — after `fleetd demo` ends its in-memory chain, or during an
// outage — from what triage last stored in the data dir (StoreDir).

// OpenStored opens dataDir's triage store to read instead of the node, or
// fails with a message saying there is none; config is asked for only when
// there is one.
func OpenStored(dataDir string, config func() (Config, error)) (*Triage, error) {
	if _, err := os.Stat(filepath.Join(dataDir, StoreDir)); err != nil {
		return nil, fmt.Errorf("no triage store in %s to read instead", dataDir)
	}
	cfg, err := config()
	if err != nil {
		return nil, fmt.Errorf("triage config: %w", err)
	}
	return Open(dataDir, cfg)
}

// ReadStored feeds fn the entries t stored and returns how many and the
// checkpoint they were read at; ok is false when the store is empty.
func (t *Triage) ReadStored(fn func([]Entry) error) (n int, cp Checkpoint, ok bool, err error) {
	cp, ok, err = t.Stored(func(page []Entry) error { n += len(page); return fn(page) })
	return n, cp, ok, err
}
