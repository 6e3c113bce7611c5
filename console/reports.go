package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Report file names under the reports directory, as triage writes them.
const (
	latestJSON = "latest.json"
	historyDir = "history"
)

// historyLayout is how triage names dated copies: history/2026-11-22T04-12-00Z.json.
const historyLayout = "2006-01-02T15-04-05Z"

// trendSeverities are the severities the trend picture stacks, worst first.
var trendSeverities = []fleet.Severity{
	fleet.SeverityCritical, fleet.SeverityHigh, fleet.SeverityMedium,
	fleet.SeverityLow, fleet.SeverityInfo, fleet.SeverityUnknown,
}

// TrendPoint is one dated report reduced to what the trend picture draws.
type TrendPoint struct {
	Time time.Time `json:"time"`
	// Open counts the active (open or regressed) clusters of each severity
	// among the clusters the dated copy kept (triage keeps the top 100 or
	// more, active trusted ones first).
	Open map[fleet.Severity]int `json:"open"`
	// Active is the report's own count of active clusters; when it exceeds
	// the sum of Open, the copy was cut and the rest is drawn as "beyond
	// the kept rows".
	Active int `json:"active"`
}

// Beyond is how many active clusters the dated copy did not keep.
func (p TrendPoint) Beyond() int {
	n := 0
	for _, c := range p.Open {
		n += c
	}
	return max(p.Active-n, 0)
}

// History is the dated reports, oldest first.
type History struct {
	Points []TrendPoint
	// counts[i][id] is cluster id's Count in Points[i], when kept there.
	counts []map[string]int
}

// Counts returns cluster id's occurrence count in each dated report,
// oldest first, -1 where that report did not keep it.
func (h *History) Counts(id string) []int {
	out := make([]int, len(h.counts))
	for i, m := range h.counts {
		if c, ok := m[id]; ok {
			out[i] = c
		} else {
			out[i] = -1
		}
	}
	return out
}

// Reports reads triage's report files in one directory, caching what it
// decoded by file size and modification time: the 10,000-cluster latest
// report and hundreds of dated copies are decoded once, not per page view.
// It is safe for concurrent use.
type Reports struct {
	dir string

	mu      sync.Mutex
	latest  *fleet.Report
	latestK fileKey
	hist    map[string]histEntry
	// histDir is the history directory's modification time when histAll
	// was built: dated copies are written once and renamed into place, so
	// an unchanged directory means an unchanged history.
	histDir time.Time
	histAll *History
}

type fileKey struct {
	size int64
	mod  time.Time
}

type histEntry struct {
	key    fileKey
	point  TrendPoint
	counts map[string]int
}

// NewReports reads the report files in dir (<data_dir>/reports).
func NewReports(dir string) *Reports { return &Reports{dir: dir, hist: map[string]histEntry{}} }

// Dir is the reports directory.
func (r *Reports) Dir() string { return r.dir }

// Latest returns the latest report. The error wraps ErrNoReport when triage
// has not written one yet, and names the file when it does not decode. The
// report is shared: callers must not modify it.
func (r *Reports) Latest() (*fleet.Report, error) {
	path := filepath.Join(r.dir, latestJSON)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: triage has not written %s", ErrNoReport, path)
	}
	if err != nil {
		return nil, fmt.Errorf("latest report: %w", err)
	}
	key := fileKey{fi.Size(), fi.ModTime()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest != nil && r.latestK == key {
		return r.latest, nil
	}
	rep, err := ReadReport(path)
	if err != nil {
		return nil, err
	}
	r.latest, r.latestK = rep, key
	return rep, nil
}

// ReadReport decodes one report file. The error names the file and what
// was wrong.
func ReadReport(path string) (*fleet.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	rep, err := DecodeReport(b)
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	return rep, nil
}

// DecodeReport decodes a report's JSON. It refuses a schema other than
// fleet.ReportSchema and rows without an id, so a page never links to a
// cluster it cannot show.
func DecodeReport(b []byte) (*fleet.Report, error) {
	var rep fleet.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if rep.Schema != fleet.ReportSchema {
		return nil, fmt.Errorf("decode report: schema %d, want %d", rep.Schema, fleet.ReportSchema)
	}
	for i := range rep.Clusters {
		if rep.Clusters[i].ID == "" {
			return nil, fmt.Errorf("decode report: cluster %d (rank %d) has no id", i, rep.Clusters[i].Rank)
		}
	}
	return &rep, nil
}

// History returns the dated reports, oldest first, reading only the files
// it has not seen or that changed. Files that do not decode are skipped
// (the error lists them; the rest is still returned).
func (r *Reports) History() (*History, error) {
	dir := filepath.Join(r.dir, historyDir)
	var dirMod time.Time
	if fi, err := os.Stat(dir); err == nil {
		dirMod = fi.ModTime()
		r.mu.Lock()
		h := r.histAll
		same := h != nil && r.histDir.Equal(dirMod)
		r.mu.Unlock()
		if same {
			return h, nil
		}
	}
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &History{}, nil
	}
	if err != nil {
		return &History{}, fmt.Errorf("report history: %w", err)
	}
	type file struct {
		name  string
		stamp time.Time
	}
	var files []file
	for _, de := range des {
		stamp, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok {
			continue
		}
		t, err := time.Parse(historyLayout, stamp)
		if err != nil {
			continue
		}
		files = append(files, file{de.Name(), t})
	}
	slices.SortFunc(files, func(a, b file) int { return a.stamp.Compare(b.stamp) })

	r.mu.Lock()
	defer r.mu.Unlock()
	h := &History{}
	seen := make(map[string]bool, len(files))
	var errs []error
	for _, f := range files {
		seen[f.name] = true
		path := filepath.Join(dir, f.name)
		fi, err := os.Stat(path)
		if err != nil {
			continue // pruned meanwhile
		}
		key := fileKey{fi.Size(), fi.ModTime()}
		e, ok := r.hist[f.name]
		if !ok || e.key != key {
			rep, err := ReadReport(path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			e = histEntry{key: key, point: trendPoint(rep), counts: make(map[string]int, len(rep.Clusters))}
			for _, row := range rep.Clusters {
				e.counts[row.ID] = row.Count
			}
			r.hist[f.name] = e
		}
		h.Points = append(h.Points, e.point)
		h.counts = append(h.counts, e.counts)
	}
	for name := range r.hist {
		if !seen[name] {
			delete(r.hist, name)
		}
	}
	if len(errs) == 0 && !dirMod.IsZero() {
		r.histAll, r.histDir = h, dirMod
	}
	return h, errors.Join(errs...)
}

// trendPoint reduces a report to its active clusters by severity.
func trendPoint(rep *fleet.Report) TrendPoint {
	p := TrendPoint{Time: rep.GeneratedAt, Open: map[fleet.Severity]int{}, Active: rep.Totals.Open + rep.Totals.Regressed}
	for i := range rep.Clusters {
		row := &rep.Clusters[i]
		if !row.State.Active() {
			continue
		}
		sev := row.Severity
		if !slices.Contains(trendSeverities, sev) {
			sev = fleet.SeverityUnknown
		}
		p.Open[sev]++
	}
	return p
}
