package main

import (
	"io"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sarif"
)

// formatSARIF is `fleetd report --format sarif`: the report as a SARIF
// 2.1.0 log for code scanning (package sarif).
const formatSARIF = "sarif"

// renderSARIF writes r as SARIF, with the full text of each cluster's first
// entry from the triage store when it can be opened (file:line locations
// are read from crash output past the title). A store another process
// holds (the daemon) only costs those locations.
func (a findingsCommands) renderSARIF(w io.Writer, r fleet.Report) error {
	return sarif.Render(w, r, a.sarifOptions(r))
}

// sarifOptions are the options for r: fleetd's version, target.repo, and
// the stored texts of the clusters' first entries.
func (a findingsCommands) sarifOptions(r fleet.Report) sarif.Options {
	opt := sarif.Options{ToolVersion: versionString()}
	if a.cfg.Target != nil && a.cfg.Target.Repo != nil {
		opt.Repo, opt.RepoURL = true, a.cfg.Target.Repo.URL
	}
	texts := a.storedSummaries(r)
	if len(texts) > 0 {
		opt.Text = func(c fleet.Cluster) string {
			if len(c.Entries) == 0 {
				return ""
			}
			return texts[c.Entries[0]]
		}
	}
	return opt
}

// storedSummaries maps the first entry of each cluster of r to its
// summary, from the triage store; nil when the store cannot be read.
func (a findingsCommands) storedSummaries(r fleet.Report) map[uint64]string {
	want := map[uint64]bool{}
	for _, c := range r.Clusters {
		if len(c.Entries) > 0 {
			want[c.Entries[0]] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	t, err := a.openStoredTriage()
	if err != nil {
		return nil
	}
	defer t.Close()
	out := make(map[uint64]string, len(want))
	if _, _, err := t.Stored(func(page []chain.Entry) error {
		for _, e := range page {
			if want[e.Index] {
				f, _ := fleet.Parse(e.Text)
				out[e.Index] = f.Summary
			}
		}
		return nil
	}); err != nil {
		return nil
	}
	return out
}
