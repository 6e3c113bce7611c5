package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
)

// pageNames are the page templates; each is parsed with the layout and the
// partials.
var pageNames = []string{"health", "cluster", "runs", "run", "fleet", "feed", "login", "error"}

func funcs() template.FuncMap {
	return template.FuncMap{
		"ago":      ago,
		"sevClass": sevClass,
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"ms": func(ms int64) string {
			return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String()
		},
		"short": func(s string) string {
			if len(s) > 14 && strings.HasPrefix(s, "0x") {
				return s[:8] + "…" + s[len(s)-4:]
			}
			return s
		},
		"join": strings.Join,
		"pct": func(used, limit uint64) int {
			if limit == 0 {
				return 0
			}
			return int(min(100, used*100/limit))
		},
		"add": func(a, b int) int { return a + b },
		// somePlaces is a folded row's first places, for a table cell.
		"somePlaces": func(ps []fleet.Place) []fleet.Place { return ps[:min(len(ps), placesShown)] },
		"morePlaces": func(ps []fleet.Place) int { return max(0, len(ps)-placesShown) },
		"reproOf":    reproText,
		"replayOf":   replayCommand,
		"stateClass": func(s fleet.ClusterState) string {
			return "state-" + strings.Map(func(r rune) rune {
				if 'a' <= r && r <= 'z' || r == '-' {
					return r
				}
				return '-'
			}, string(s))
		},
	}
}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs()).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console templates: %w", err)
		}
		out[name] = t
	}
	return out, nil
}

func reproText(r *fleet.Repro) string {
	if r == nil {
		return ""
	}
	return r.Tool + " " + string(r.Args)
}

// base is what every page's layout needs.
type base struct {
	Title   string
	Nav     string
	Path    string // this page's path and query, for forms to come back to
	Now     time.Time
	Flash   string
	User    string // the session's name, "" when not logged in
	CSRF    string
	Enabled bool // controls exist (a token is configured)
	Body    any
	// Live names the live-update behaviour the script attaches: "feed",
	// "run", or "".
	Live     string
	LiveRun  string
	LiveLast uint64
}

func (c *Console) base(r *http.Request, title, nav string) base {
	b := base{Title: title, Nav: nav, Path: r.URL.RequestURI(), Now: c.cfg.Now(), Enabled: c.cfg.Token != ""}
	if se := c.sessions.get(r); se != nil {
		b.User, b.CSRF = se.name, se.csrf
		b.Flash = c.sessions.takeFlash(se.id)
	}
	return b
}

// render executes a page into a buffer first, so a template error becomes
// a clean 500 instead of half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, b base) {
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", b); err != nil {
		c.log.Error("render page", "page", page, "err", err)
		http.Error(w, "internal error (see the daemon's log)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (c *Console) pageError(w http.ResponseWriter, r *http.Request, err error) {
	c.logControlError(r, err)
	b := c.base(r, http.StatusText(statusOf(err)), "")
	b.Body = publicError(err)
	c.render(w, r, statusOf(err), "error", b)
}

// filter is the Health page's selection.
type filter struct {
	State, Severity, Surface string
	Page                     int
}

// stateChoices are the state filter's values: "" is every state.
var stateChoices = []string{"", "active", string(fleet.ClusterOpen), string(fleet.ClusterRegressed), string(fleet.ClusterResolved), string(fleet.ClusterFalsePositive), string(fleet.ClusterAcceptedRisk)}

var severityChoices = []string{"", "critical", "high", "medium", "low", "info", "unknown"}

// placesShown bounds the places a table row lists; the cluster page lists
// them all.
const placesShown = 8

// rowsPerPage bounds the Health page's table; the JSON has every row.
const rowsPerPage = 200

func readFilter(r *http.Request) (filter, error) {
	q := r.URL.Query()
	f := filter{State: q.Get("state"), Severity: q.Get("severity"), Surface: q.Get("surface"), Page: 1}
	if !slices.Contains(stateChoices, f.State) {
		return f, fmt.Errorf("%w: state %q: want one of active, open, regressed, resolved, false-positive, accepted-risk", ErrBadRequest, clip.Text(f.State, 40))
	}
	if !slices.Contains(severityChoices, f.Severity) {
		return f, fmt.Errorf("%w: severity %q: want one of critical, high, medium, low, info, unknown", ErrBadRequest, clip.Text(f.Severity, 40))
	}
	if f.Surface != "" && !fleet.Surface(f.Surface).Valid() {
		return f, fmt.Errorf("%w: surface %q is not a surface name", ErrBadRequest, clip.Text(f.Surface, 40))
	}
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return f, fmt.Errorf("%w: page %q: want a number from 1", ErrBadRequest, clip.Text(p, 20))
		}
		f.Page = n
	}
	return f, nil
}

func (f filter) keep(row *fleet.Cluster) bool {
	switch f.State {
	case "":
	case "active":
		if !row.State.Active() {
			return false
		}
	default:
		if string(row.State) != f.State {
			return false
		}
	}
	if f.Severity != "" && string(row.Severity) != f.Severity {
		return false
	}
	return f.Surface == "" || string(row.Surface) == f.Surface
}

// apply returns the rows f keeps.
func (f filter) apply(rows []fleet.Cluster) []fleet.Cluster {
	if f.State == "" && f.Severity == "" && f.Surface == "" {
		return rows
	}
	out := make([]fleet.Cluster, 0, len(rows))
	for i := range rows {
		if f.keep(&rows[i]) {
			out = append(out, rows[i])
		}
	}
	return out
}

// query is the filter as a query string for page links.
func (f filter) query(page int) string {
	v := make([]string, 0, 4)
	for _, kv := range [][2]string{{"state", f.State}, {"severity", f.Severity}, {"surface", f.Surface}} {
		if kv[1] != "" {
			v = append(v, kv[0]+"="+kv[1])
		}
	}
	if page > 1 {
		v = append(v, "page="+strconv.Itoa(page))
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + strings.Join(v, "&")
}

// healthView is the Health page and the HTML report's body.
type healthView struct {
	Report   *fleet.Report
	NoReport string
	Filter   filter
	Rows     []healthRow
	Matched  int
	Page     int
	Pages    int
	Prev     string
	Next     string
	States   []string
	Sevs     []string
	Surfaces []string
	Chart    *Chart
	HistErr  string
	Feed     []Event
	Now      time.Time
	Static   bool // the HTML report file: no links to pages, no forms
}

type healthRow struct {
	fleet.Cluster
	Spark *Spark
}

// health builds the Health view of the latest report.
func (c *Console) health(f filter, now time.Time) (*healthView, error) {
	v := &healthView{Filter: f, States: stateChoices, Sevs: severityChoices, Now: now}
	rep, err := c.reports.Latest()
	if errors.Is(err, ErrNoReport) {
		v.NoReport = err.Error()
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	hist, herr := c.reports.History()
	if herr != nil {
		v.HistErr = herr.Error()
	}
	fillHealth(v, rep, hist, rowsPerPage)
	return v, nil
}

// fillHealth selects, pages and decorates the rows (perPage 0: all).
func fillHealth(v *healthView, rep *fleet.Report, hist *History, perPage int) {
	v.Report = rep
	v.Chart = trendChart(hist)
	seen := map[string]bool{}
	for i := range rep.Clusters {
		if s := string(rep.Clusters[i].Surface); s != "" && !seen[s] {
			seen[s] = true
			v.Surfaces = append(v.Surfaces, s)
		}
	}
	slices.Sort(v.Surfaces)
	rows := v.Filter.apply(rep.Clusters)
	v.Matched = len(rows)
	v.Pages, v.Page = 1, 1
	if perPage > 0 {
		v.Pages = max(1, (len(rows)+perPage-1)/perPage)
		v.Page = min(max(v.Filter.Page, 1), v.Pages)
		rows = rows[(v.Page-1)*perPage : min(len(rows), v.Page*perPage)]
		if v.Page > 1 {
			v.Prev = v.Filter.query(v.Page - 1)
		}
		if v.Page < v.Pages {
			v.Next = v.Filter.query(v.Page + 1)
		}
	}
	v.Rows = make([]healthRow, len(rows))
	for i := range rows {
		v.Rows[i] = healthRow{Cluster: rows[i], Spark: sparkline(hist.Counts(rows[i].ID))}
	}
}

func (c *Console) healthPage(w http.ResponseWriter, r *http.Request) {
	f, err := readFilter(r)
	if err != nil {
		c.pageError(w, r, err)
		return
	}
	b := c.base(r, "Health", "health")
	v, err := c.health(f, b.Now)
	if err != nil {
		c.pageError(w, r, err)
		return
	}
	v.Feed = c.hub.Recent(8, func(e *Event) bool { return e.Kind == KindFinding || e.Kind == KindCluster })
	b.Body, b.Live, b.LiveLast = v, "feed", c.hub.Last()
	c.render(w, r, http.StatusOK, "health", b)
}

// clusterView is one cluster's page.
type clusterView struct {
	Row        fleet.Cluster
	Spark      *Spark
	Entries    []entryView
	EntriesErr string
	Correction *entryView
	Runs       []runRef
	MarkRef    uint64
	MarkKinds  []string
}

type entryView struct {
	Entry
	Finding fleet.Finding
	RunLink bool // a run record with the finding's run id exists here
}

// RunLinked reports whether run id has a record here (the template links it).
func (v *clusterView) RunLinked(id string) bool {
	for _, r := range v.Runs {
		if r.ID == id {
			return r.Link
		}
	}
	return false
}

type runRef struct {
	ID   string
	Link bool
}

func (c *Console) cluster(ctx context.Context, id string) (*clusterView, error) {
	rep, err := c.reports.Latest()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(rep.Clusters, func(r fleet.Cluster) bool { return r.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: no cluster %q in the latest report", ErrNotFound, clip.Text(id, 80))
	}
	v := &clusterView{Row: rep.Clusters[i], MarkKinds: markKinds}
	if len(v.Row.Entries) > 0 {
		v.MarkRef = v.Row.Entries[0]
	}
	hist, _ := c.reports.History()
	v.Spark = sparkline(hist.Counts(id))
	want := slices.Clone(v.Row.Entries)
	if v.Row.Correction != nil {
		want = append(want, *v.Row.Correction)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	entries, err := c.cfg.Source.Entries(ctx, want)
	if err != nil {
		v.EntriesErr = publicError(err)
		if statusOf(err) == http.StatusInternalServerError {
			c.log.Error("cluster entries", "cluster", id, "err", err)
		}
	}
	seenRun := map[string]bool{}
	for _, e := range entries {
		ev := entryView{Entry: e}
		ev.Finding, _ = fleet.Parse(e.Text)
		if run := ev.Finding.Run; run != "" && ValidRunID(run) {
			ev.RunLink = c.runExists(run)
			if !seenRun[run] {
				seenRun[run] = true
				v.Runs = append(v.Runs, runRef{ID: run, Link: ev.RunLink})
			}
		}
		if v.Row.Correction != nil && e.Index == *v.Row.Correction {
			cp := ev
			v.Correction = &cp
			continue
		}
		v.Entries = append(v.Entries, ev)
	}
	return v, nil
}

func (c *Console) runExists(id string) bool {
	_, err := os.Stat(filepath.Join(c.cfg.RunsDir, id+".jsonl"))
	return err == nil
}

func (c *Console) clusterPage(w http.ResponseWriter, r *http.Request) {
	v, err := c.cluster(r.Context(), r.PathValue("id"))
	if err != nil {
		c.pageError(w, r, err)
		return
	}
	b := c.base(r, "Cluster "+clip.Text(v.Row.Title, 60), "health")
	b.Body = v
	c.render(w, r, http.StatusOK, "cluster", b)
}

// runsView is the Runs page.
type runsView struct {
	Runs  []RunSummary
	Total int
	Err   string
	Page  int
	Pages int
	Prev  string
	Next  string
}

const runsPerPage = 100

func (c *Console) runsPage(w http.ResponseWriter, r *http.Request) {
	b := c.base(r, "Runs", "runs")
	runs, err := c.runs.List()
	v := &runsView{Total: len(runs), Page: 1}
	if err != nil {
		v.Err = err.Error()
	}
	if p := r.URL.Query().Get("page"); p != "" {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 {
			c.pageError(w, r, fmt.Errorf("%w: page %q: want a number from 1", ErrBadRequest, clip.Text(p, 20)))
			return
		}
		v.Page = n
	}
	v.Pages = max(1, (len(runs)+runsPerPage-1)/runsPerPage)
	v.Page = min(v.Page, v.Pages)
	v.Runs = runs[(v.Page-1)*runsPerPage : min(len(runs), v.Page*runsPerPage)]
	if v.Page > 1 {
		v.Prev = "/runs?page=" + strconv.Itoa(v.Page-1)
	}
	if v.Page < v.Pages {
		v.Next = "/runs?page=" + strconv.Itoa(v.Page+1)
	}
	b.Body, b.Live, b.LiveLast = v, "runs", c.hub.Last()
	c.render(w, r, http.StatusOK, "runs", b)
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	d, err := c.runs.Get(r.PathValue("id"))
	if err != nil {
		c.pageError(w, r, err)
		return
	}
	b := c.base(r, "Run "+d.Summary.RunID, "runs")
	b.Body = d
	if d.Footer == nil {
		b.Live, b.LiveRun, b.LiveLast = "run", d.Summary.RunID, c.hub.Last()
	}
	c.render(w, r, http.StatusOK, "run", b)
}

// fleetView is the Fleet page.
type fleetView struct {
	Fleet
	Err      string
	Audit    []fleet.AuditRecord
	FuzzRows []fuzzRow
}

// fuzzRow is one target and engine on the Fleet page, with its plot.
type fuzzRow struct {
	FuzzStats
	Measure string // what Points count: edges, features or inputs kept
	Plot    *Spark
	States  []FuzzCrash // the first few crash states
	More    int         // the states not shown
}

func fuzzRows(fs []FuzzStats) []fuzzRow {
	out := make([]fuzzRow, len(fs))
	for i, f := range fs {
		m := "corpus"
		switch {
		case f.Coverage > 0:
			m = "edges"
		case f.Features > 0:
			m = "features"
		}
		out[i] = fuzzRow{FuzzStats: f, Measure: m, Plot: fuzzPlot(f.Points, m), States: f.Crashes[:min(len(f.Crashes), 3)], More: max(len(f.Crashes)-3, 0)}
	}
	return out
}

// fleet returns the fleet's state: the source's, the dial and kill switch
// from the data dir, and each specialist's latest run from the records.
func (c *Console) fleet(ctx context.Context) (Fleet, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	f, err := c.cfg.Source.Fleet(ctx)
	d, derr := c.cfg.Control.Dial()
	f.Dial = d.String()
	if derr != nil {
		f.DialError = derr.Error() + " (treated as observe)"
	}
	f.Paused, _ = c.cfg.Control.Paused()
	runs, _ := c.runs.List()
	for i := range f.Specialists {
		s := &f.Specialists[i]
		if s.LastRunID != "" {
			continue
		}
		for _, run := range runs { // newest first
			if run.Specialist == s.Name {
				s.LastRunID, s.LastOutcome, s.LastEnded = run.RunID, run.Outcome, run.EndedAt
				if run.Live {
					s.LastOutcome = "running"
				}
				break
			}
		}
	}
	return f, err
}

func (c *Console) fleetPage(w http.ResponseWriter, r *http.Request) {
	b := c.base(r, "Fleet", "fleet")
	f, err := c.fleet(r.Context())
	v := &fleetView{Fleet: f, FuzzRows: fuzzRows(f.Fuzz)}
	if err != nil {
		v.Err = publicError(err)
	}
	if audit, err := c.cfg.Control.Audit(); err == nil {
		for i := len(audit) - 1; i >= 0 && len(v.Audit) < 10; i-- {
			v.Audit = append(v.Audit, audit[i])
		}
	}
	b.Body, b.Live, b.LiveLast = v, "fleet", c.hub.Last()
	c.render(w, r, http.StatusOK, "fleet", b)
}

func (c *Console) feedPage(w http.ResponseWriter, r *http.Request) {
	b := c.base(r, "Live feed", "feed")
	b.Body = c.hub.Recent(100, func(e *Event) bool { return feedKind(e.Kind) })
	b.Live, b.LiveLast = "feed", c.hub.Last()
	c.render(w, r, http.StatusOK, "feed", b)
}

type loginView struct {
	Back  string
	Error string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	b := c.base(r, "Log in", "")
	b.Body = loginView{Back: safeBack(r.URL.Query().Get("back"))}
	c.render(w, r, http.StatusOK, "login", b)
}

func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	b := c.base(r, "Log in", "")
	b.Body = loginView{Back: safeBack(r.FormValue("back")), Error: msg}
	c.render(w, r, status, "login", b)
}
