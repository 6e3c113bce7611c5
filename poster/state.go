package poster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// The flood protection of findings (per-source rate limit, per-fingerprint
// dedupe window) must hold across processes and restarts: a cron job or a
// Kubernetes CronJob starts a new process every run, and one that forgets
// what the last one posted reposts the same finding every time. So the
// state lives in a file (Config.StateFile) that processes sharing a
// data dir update under a lock, and the log itself is the source of truth
// across data dirs: before deciding, the poster folds the log's entries
// since it last looked (at most maxFold of the newest) into the state, so a
// fingerprint any trusted sender posted within the window is not posted
// again. Only the fleet's own identity and the trusted senders count: the log
// is permissionless, and a stranger must not be able to silence a finding by
// posting its fingerprint first.

// maxFold bounds how many of the newest entries one decision reads when the
// state is far behind the log (a first run against a long log).
const maxFold = 10_000

// postState is what the poster remembers about findings (records keep no
// state: their log keys dedupe them).
type postState struct {
	Version int                    `json:"version"`
	Posted  map[string][]time.Time `json:"posted"`   // source -> post times within Window
	Seen    map[string]time.Time   `json:"seen"`     // fingerprint -> last posted, queued or seen on the log
	LogNext uint64                 `json:"log_next"` // log entries before this index are folded into Seen
	LogAt   string                 `json:"log_at,omitempty"`
}

const stateVersion = 1

func newState() *postState {
	return &postState{Version: stateVersion, Posted: map[string][]time.Time{}, Seen: map[string]time.Time{}}
}

// withState runs fn on the current state under the state lock and saves it
// when fn returns save. Without a StateFile the state lives in memory (one
// process). A state file that cannot be read is moved aside, never
// overwritten blindly, and a fresh state (rebuilt from the log) is used.
func (p *Poster) withState(ctx context.Context, fn func(*postState) (save bool, err error)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.StateFile == "" {
		if p.mem == nil {
			p.mem = newState()
		}
		_, err := fn(p.mem)
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, p.cfg.PostTimeout)
	unlock, err := fleet.LockFile(lctx, p.cfg.StateFile+".lock")
	cancel()
	if err != nil {
		return fmt.Errorf("reporter state: %w", err)
	}
	defer unlock()
	st := newState()
	b, err := os.ReadFile(p.cfg.StateFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reporter state: %w", err)
	default:
		if jerr := json.Unmarshal(b, st); jerr != nil || st.Version != stateVersion {
			bad := p.cfg.StateFile + ".corrupt"
			os.Rename(p.cfg.StateFile, bad)
			p.log.Error("reporter state unreadable: moved aside, rebuilding from the log", "file", bad, "err", jerr)
			st = newState()
		}
		if st.Posted == nil {
			st.Posted = map[string][]time.Time{}
		}
		if st.Seen == nil {
			st.Seen = map[string]time.Time{}
		}
	}
	save, err := fn(st)
	if err != nil || !save {
		return err
	}
	out, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := fleet.WriteFileAtomic(p.cfg.StateFile, out, 0o600); err != nil {
		return fmt.Errorf("reporter state: %w", err)
	}
	return nil
}

// prune drops what fell out of the windows.
func (p *Poster) prune(st *postState, now time.Time) {
	for fp, t := range st.Seen {
		if now.Sub(t) >= p.cfg.DedupeWindow {
			delete(st.Seen, fp)
		}
	}
	for src, ts := range st.Posted {
		keep := ts[:0]
		for _, t := range ts {
			if now.Sub(t) < p.cfg.Window {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			delete(st.Posted, src)
		} else {
			st.Posted[src] = keep
		}
	}
}

// foldLog reads the log's entries since st.LogNext (at most maxFold of the
// newest) and records the fingerprints of findings from trusted senders in
// st.Seen. It reports whether it read anything; a log that cannot be read
// leaves the state as it was (the finding is still protected by what this
// data dir remembers, and queued if it cannot be posted).
func (p *Poster) foldLog(ctx context.Context, st *postState, now time.Time) bool {
	if p.cfg.Log == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.PostTimeout)
	defer cancel()
	at := p.cfg.Log.Address().String()
	if st.LogAt != at { // another log: what we knew of the old one says nothing
		st.LogAt, st.LogNext = at, 0
	}
	n, err := p.cfg.Log.Count(ctx)
	if err != nil || n <= st.LogNext {
		return false
	}
	from := st.LogNext
	if n-from > maxFold {
		from = n - maxFold
	}
	res, err := p.cfg.Log.Scan(ctx, from, func(page []chain.Entry) error {
		for _, e := range page {
			if !p.trusted(e.Sender) || !hasFP(e.Text) {
				continue
			}
			f, perr := fleet.Parse(e.Text)
			if perr != nil || f.FreeForm || f.Fingerprint == "" || (f.Kind != "" && f.Kind != fleet.KindFinding) {
				continue
			}
			t := e.Time
			if t.After(now) || t.IsZero() {
				t = now // dev chains' block times run ahead of the wall clock
			}
			if old, ok := st.Seen[f.Fingerprint]; !ok || t.After(old) {
				st.Seen[f.Fingerprint] = t
			}
		}
		return nil
	})
	if err != nil {
		p.log.Warn("reporter: the log could not be read for dedupe; using what this data dir remembers", "err", err)
		return false
	}
	st.LogNext = res.Next
	return true
}

// hasFP is a cheap filter before a full parse: qa/v1 with an fp= key.
func hasFP(text string) bool {
	line, _, _ := strings.Cut(text, "\n")
	return strings.HasPrefix(line, "qa/v1 ") && strings.Contains(line, " fp=")
}

func (p *Poster) trusted(a fleet.Address) bool {
	if p.cfg.Identity != nil && a == p.cfg.Identity.Address() {
		return true
	}
	for _, t := range p.cfg.Trusted {
		if t == a {
			return true
		}
	}
	return false
}
