package fleet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// The daily budget is shared by every process on a data dir (the daemon,
// `fleetd mcp`, a cron job): each one re-reads the day before deciding, and
// adds its spend to the file's count under a lock, so no process overwrites
// another's spend with its own stale copy.

// sync replaces the in-memory day with the file's when the file can be read;
// d.mu is held. Every Add writes the file, so it never holds less than this
// process added.
func (d *DailyBudget) sync() {
	b, err := os.ReadFile(d.path)
	if err != nil {
		return
	}
	var rec dailyRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return
	}
	d.day = rec
}

// lockFile serializes read-add-write across processes; a lock that cannot
// be had within a few seconds is skipped rather than losing the spend.
func (d *DailyBudget) lockFile() func() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(d.path), 0o700); err != nil {
		return func() {}
	}
	unlock, err := LockFile(ctx, d.path+".lock")
	if err != nil {
		return func() {}
	}
	return unlock
}
