package triage

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// ReportLibrary serves the health report saved in Dir (the data dir's
// reports/) to MCP clients (mcpserver.Library).
type ReportLibrary struct{ Dir string }

// LatestReport reads <data_dir>/reports/latest.{md,json} as triage wrote
// them; an error wrapping fs.ErrNotExist when triage has not written one.
func (l ReportLibrary) LatestReport(context.Context) ([]byte, []byte, error) {
	md, err := os.ReadFile(filepath.Join(l.Dir, LatestMD))
	if err != nil {
		return nil, nil, err
	}
	js, err := os.ReadFile(filepath.Join(l.Dir, LatestJSON))
	if err != nil {
		return nil, nil, err
	}
	return md, js, nil
}

// Cluster returns the latest report's cluster id (or one merged into it) as
// JSON; an error wrapping fs.ErrNotExist when there is none.
func (l ReportLibrary) Cluster(_ context.Context, id string) ([]byte, error) {
	r, err := LoadReport(l.Dir)
	if err != nil {
		return nil, err
	}
	for _, row := range r.Clusters {
		if row.ID == id || slices.Contains(row.Merged, id) {
			return json.MarshalIndent(row, "", "  ")
		}
	}
	return nil, fmt.Errorf("cluster %s: %w", id, fs.ErrNotExist)
}
