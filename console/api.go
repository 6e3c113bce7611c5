package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sarif"
)

// filteredReport is the latest report with the request's filters applied;
// on an error it has answered and ok is false.
func (c *Console) filteredReport(w http.ResponseWriter, r *http.Request) (out fleet.Report, ok bool) {
	f, err := readFilter(r)
	if err != nil {
		c.apiError(w, r, err)
		return out, false
	}
	rep, err := c.reports.Latest()
	if err != nil {
		c.apiError(w, r, err)
		return out, false
	}
	out = *rep
	out.Clusters = f.apply(rep.Clusters)
	return out, true
}

// apiReport is the latest report as JSON, with the Health page's filters
// (state, severity, surface) applied when given. Without filters it is
// latest.json as decoded: every row.
func (c *Console) apiReport(w http.ResponseWriter, r *http.Request) {
	out, ok := c.filteredReport(w, r)
	if !ok {
		return
	}
	if out.Clusters == nil {
		out.Clusters = []fleet.Cluster{}
	}
	writeJSON(w, http.StatusOK, out)
}

// apiReportSARIF is the latest report as a SARIF 2.1.0 log (package
// sarif), with the same filters as apiReport: what a CI job or a code host
// fetches from a running daemon. Locations come from the report alone (the
// console does not read the triage store, so no file:line from crash
// output past a title).
func (c *Console) apiReportSARIF(w http.ResponseWriter, r *http.Request) {
	out, ok := c.filteredReport(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/sarif+json")
	w.Header().Set("Cache-Control", "no-store")
	if err := sarif.Render(w, out, sarif.Options{ToolVersion: c.cfg.Version}); err != nil {
		c.log.Warn("write sarif report", "err", err)
	}
}

// apiHistory is the trend: one point per dated report.
func (c *Console) apiHistory(w http.ResponseWriter, r *http.Request) {
	h, err := c.reports.History()
	body := map[string]any{"points": h.Points}
	if h.Points == nil {
		body["points"] = []TrendPoint{}
	}
	if err != nil {
		body["skipped"] = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

// apiCluster is one cluster: its row, entries (with tx when known), the
// correction that set its state, the runs that reported it, and its count
// in each dated report.
func (c *Console) apiCluster(w http.ResponseWriter, r *http.Request) {
	v, err := c.cluster(r.Context(), r.PathValue("id"))
	if err != nil {
		c.apiError(w, r, err)
		return
	}
	hist, _ := c.reports.History()
	type entry struct {
		Entry
		Run string `json:"run,omitempty"`
	}
	body := map[string]any{"cluster": v.Row, "history": hist.Counts(v.Row.ID)}
	entries := make([]entry, 0, len(v.Entries))
	for _, e := range v.Entries {
		entries = append(entries, entry{e.Entry, e.Finding.Run})
	}
	body["entries"] = entries
	if v.EntriesErr != "" {
		body["entries_error"] = v.EntriesErr
	}
	if v.Correction != nil {
		body["correction"] = v.Correction.Entry
	}
	runs := []string{}
	for _, rr := range v.Runs {
		runs = append(runs, rr.ID)
	}
	body["runs"] = runs
	writeJSON(w, http.StatusOK, body)
}

// apiRuns lists the runs, newest first; ?limit=N keeps the first N.
func (c *Console) apiRuns(w http.ResponseWriter, r *http.Request) {
	runs, err := c.runs.List()
	if runs == nil {
		runs = []RunSummary{}
	}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, perr := strconv.Atoi(l)
		if perr != nil || n < 0 {
			c.apiError(w, r, fmt.Errorf("%w: limit %q: want a number from 0", ErrBadRequest, clip.Text(l, 20)))
			return
		}
		if n > 0 && n < len(runs) {
			runs = runs[:n]
		}
	}
	body := map[string]any{"runs": runs}
	if err != nil {
		body["unreadable"] = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

func (c *Console) apiRun(w http.ResponseWriter, r *http.Request) {
	d, err := c.runs.Get(r.PathValue("id"))
	if err != nil {
		c.apiError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (c *Console) apiFleet(w http.ResponseWriter, r *http.Request) {
	f, err := c.fleet(r.Context())
	if err != nil && !errors.Is(err, ErrUnavailable) {
		c.apiError(w, r, err)
		return
	}
	if f.Running == nil {
		f.Running = []string{}
	}
	writeJSON(w, http.StatusOK, f)
}

// apiFeed is the newest feed events, newest first (?limit=N, default 100).
func (c *Console) apiFeed(w http.ResponseWriter, r *http.Request) {
	n := 100
	if l := r.URL.Query().Get("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 1 {
			c.apiError(w, r, fmt.Errorf("%w: limit %q: want a number from 1", ErrBadRequest, clip.Text(l, 20)))
			return
		}
		n = v
	}
	ev := c.hub.Recent(n, func(e *Event) bool { return feedKind(e.Kind) })
	if ev == nil {
		ev = []Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": ev, "last": c.hub.Last()})
}

// eventFilter is what an SSE subscriber asked for: ?kinds=a,b (default:
// every kind but turn), ?run=ID (that run's events only, turns included).
func eventFilter(r *http.Request) (func(*Event) bool, error) {
	q := r.URL.Query()
	var kinds []string
	if k := q.Get("kinds"); k != "" {
		kinds = strings.Split(k, ",")
		for _, k := range kinds {
			switch k {
			case KindRunStarted, KindRunSkipped, KindRunFinished, KindTurn, KindFinding, KindCluster, KindControl:
			default:
				return nil, fmt.Errorf("%w: kinds: unknown kind %q", ErrBadRequest, clip.Text(k, 40))
			}
		}
	}
	run := q.Get("run")
	if run != "" && !ValidRunID(run) {
		return nil, fmt.Errorf("%w: run id %q: want 1-128 of [A-Za-z0-9._-]", ErrBadRequest, clip.Text(run, 40))
	}
	return func(e *Event) bool {
		if run != "" && e.RunID != run {
			return false
		}
		if kinds != nil {
			return slices.Contains(kinds, e.Kind)
		}
		return run != "" || feedKind(e.Kind)
	}, nil
}

// apiEvents streams events as Server-Sent Events: "id: N" and "data:
// <json>" per event. It resumes after Last-Event-ID (or ?since=N), sends a
// comment line every Heartbeat while idle, and ends when the client goes,
// the hub closes, or the write fails.
func (c *Console) apiEvents(w http.ResponseWriter, r *http.Request) {
	keep, err := eventFilter(r)
	if err != nil {
		c.apiError(w, r, err)
		return
	}
	since := c.hub.Last()
	for _, s := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("since")} {
		if s == "" {
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			c.apiError(w, r, fmt.Errorf("%w: event id %q: want a number", ErrBadRequest, clip.Text(s, 20)))
			return
		}
		since = n
		break
	}
	if !c.hub.join(c.cfg.MaxSubscribers) {
		c.apiError(w, r, fmt.Errorf("%w: too many live-feed clients (%d) or shutting down", ErrUnavailable, c.cfg.MaxSubscribers))
		return
	}
	defer c.hub.leave()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var buf []byte
	buf = append(buf, "retry: 3000\n\n"...)
	var batch []Event
	tick := time.NewTicker(c.cfg.Heartbeat)
	defer tick.Stop()
	for {
		var (
			wake <-chan struct{}
			lost bool
			upto uint64
		)
		batch, upto, wake, lost = c.hub.Since(batch[:0], since, keep)
		if lost {
			buf = appendSSE(buf, Event{ID: since, Kind: KindResync, Text: "missed events: the feed fell behind; reload for the full picture"})
		}
		for i := range batch {
			buf = appendSSE(buf, batch[i])
		}
		since = upto // events the filter dropped advance the cursor too
		if len(buf) > 0 {
			if _, err := w.Write(buf); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			buf = buf[:0]
		}
		select {
		case <-r.Context().Done():
			return
		case <-wake:
			if c.hub.Closed() {
				return
			}
		case <-tick.C:
			buf = append(buf, ": keep-alive\n\n"...)
		}
	}
}

// appendSSE appends one event in the SSE wire format. encoding/json never
// writes a raw newline, so the data is one line.
func appendSSE(buf []byte, e Event) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		return buf
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendUint(buf, e.ID, 10)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...)
}
