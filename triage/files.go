package triage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Report file names under the reports directory (<data_dir>/reports).
const (
	LatestJSON = "latest.json"
	LatestMD   = "latest.md"
	HistoryDir = "history"
)

// historyLayout names dated copies: reports/history/2026-11-22T04-12-00Z.json.
const historyLayout = "2006-01-02T15-04-05Z"

// historyClusters is how many clusters a dated JSON copy keeps at least:
// the latest report holds them all, history only needs the top of each.
const historyClusters = 100

// WriteReport writes r to dir: latest.json (every cluster), latest.md (the
// first top clusters; all when top <= 0) and dated copies of both under
// history/ (the JSON copy cut to the first max(top, 100) clusters), keeping
// the newest keep pairs (all when keep <= 0). Each file is written to a
// temporary file, synced and renamed into place, so a reader sees the old
// report or the new one, never half of one.
func WriteReport(dir string, r fleet.Report, top, keep int) error {
	hist := filepath.Join(dir, HistoryDir)
	if err := os.MkdirAll(hist, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	var js, hjs, md bytes.Buffer
	if err := RenderJSON(&js, r, 0); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := RenderJSON(&hjs, r, max(top, historyClusters)); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := RenderMarkdown(&md, r, top, r.GeneratedAt); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	stamp := r.GeneratedAt.UTC().Format(historyLayout)
	for _, f := range []struct {
		path string
		data []byte
	}{
		{filepath.Join(hist, stamp+".json"), hjs.Bytes()},
		{filepath.Join(hist, stamp+".md"), md.Bytes()},
		{filepath.Join(dir, LatestJSON), js.Bytes()},
		{filepath.Join(dir, LatestMD), md.Bytes()},
	} {
		if err := writeFileAtomic(f.path, f.data, 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if keep > 0 {
		if err := pruneHistory(hist, keep); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}

// pruneHistory removes all but the newest keep dated reports.
func pruneHistory(hist string, keep int) error {
	des, err := os.ReadDir(hist)
	if err != nil {
		return err
	}
	var stamps []string
	for _, de := range des {
		name := de.Name()
		stamp, ok := strings.CutSuffix(name, ".json")
		if !ok {
			continue
		}
		if _, err := time.Parse(historyLayout, stamp); err == nil {
			stamps = append(stamps, stamp)
		}
	}
	if len(stamps) <= keep {
		return nil
	}
	slices.Sort(stamps) // the layout sorts by time
	var errs []error
	for _, stamp := range stamps[:len(stamps)-keep] {
		for _, ext := range []string{".json", ".md"} {
			if err := os.Remove(filepath.Join(hist, stamp+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// LoadReport reads dir's latest.json. The error wraps os.ErrNotExist when
// no report was written yet.
func LoadReport(dir string) (fleet.Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, LatestJSON))
	if err != nil {
		return fleet.Report{}, fmt.Errorf("load report: %w", err)
	}
	var r fleet.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return fleet.Report{}, fmt.Errorf("load report %s: %w", filepath.Join(dir, LatestJSON), err)
	}
	return r, nil
}

// writeFileAtomic is fleet.WriteFileAtomic: temp file, fsync, rename, fsync
// of the directory.
var writeFileAtomic = fleet.WriteFileAtomic
