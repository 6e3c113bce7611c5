package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// WorkItems returns triage's work items with their report: the report of
// a fresh triage pass, or the one saved in reportsDir when the pass fails
// (the daemon holds the store). The error is the pass's when there is no
// saved report either.
func WorkItems(ctx context.Context, fresh func(context.Context) (fleet.Report, error), reportsDir string) ([]triage.WorkItem, fleet.Report, error) {
	r, err := fresh(ctx)
	if err != nil {
		saved, lerr := triage.LoadReport(reportsDir)
		if lerr != nil {
			return nil, r, fmt.Errorf("triage: %w", err)
		}
		r = saved
	}
	return triage.WorkItems(r), r, nil
}

// Item turns a work item into the fixer's, with its on-chain entries:
// sender and block time from the log, the transaction from the
// FeedbackSubmitted event (entryTxs). What the node does not answer is
// left empty.
func (p *Fix) Item(ctx context.Context, wi triage.WorkItem) fixer.Item {
	it := fixer.Item{ID: wi.ID, Title: wi.Title, Severity: wi.Severity, Surface: wi.Surface, Repro: wi.Repro, Sources: wi.Sources}
	for _, i := range wi.Entries {
		it.Latest = max(it.Latest, i)
	}
	log := p.cfg.Log
	if log == nil {
		for _, i := range wi.Entries {
			it.Entries = append(it.Entries, fixer.Entry{Index: i})
		}
		return it
	}
	txs := entryTxs(ctx, log, filepath.Join(p.cfg.StateDir, txCacheFile), wi.Entries)
	for _, i := range wi.Entries {
		e := fixer.Entry{Index: i, Tx: txs[i]}
		if en, err := log.At(ctx, i); err == nil {
			e.Sender, e.Time = en.Sender, en.Time
		}
		it.Entries = append(it.Entries, e)
	}
	return it
}

// txCacheFile, under the fixer's state, keeps the transactions entryTxs
// found: {"<index>": "0x<hash>"}.
const txCacheFile = "txs.json"

// entryTxs finds the transaction of each entry (triage's store keeps
// index, sender, time and text, not the tx): from the cache file at path,
// else through chain's EntryTxs, adding what it found to the file. An
// entry older than the search window gets none; the lookup is best effort
// (a node that does not answer leaves the entries without one).
func entryTxs(ctx context.Context, log *chain.FeedbackLog, path string, idx []uint64) map[uint64]string {
	cache := map[uint64]string{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &cache)
	}
	var want []uint64
	for _, i := range idx {
		if cache[i] == "" {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		return cache
	}
	found, _ := log.EntryTxs(ctx, want, chain.TxSearch{}) // the defaults: 200 eth_getLogs of 5,000 blocks, newest first
	for i, t := range found {
		cache[i] = t.Tx
	}
	if b, err := json.Marshal(cache); err == nil {
		_ = os.MkdirAll(filepath.Dir(path), 0o700)
		_ = fleet.WriteFileAtomic(path, b, 0o600)
	}
	return cache
}

// PRLinks maps cluster ids to the pull requests the fix stage opened, as
// the fixer's state in stateDir records them, for the report; nil when
// there are none or the state cannot be read.
func PRLinks(stateDir string) map[string]fleet.PRLink {
	recs, err := fixer.LoadRecords(stateDir)
	if err != nil || len(recs) == 0 {
		return nil
	}
	out := map[string]fleet.PRLink{}
	for _, r := range recs {
		if r.Number > 0 {
			l := fleet.PRLink{Number: r.Number, State: r.State, URL: r.URL, Verified: r.Verified}
			if c := r.Cause; c != nil && (c.Commit != "" || c.PresentSinceOldest) {
				l.Cause = c.Line()
			}
			out[r.Fingerprint] = l
		}
	}
	return out
}
