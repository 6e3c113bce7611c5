// Package httpapi serves the daemon's HTTP side on loopback by default:
// /healthz, Prometheus /metrics, and /api/status (dial, pause, running runs,
// per-specialist counts, the chain node up or down) as JSON, with every other path handed to the
// operator's console (subpackage console) when one is given. Errors map to
// a status and a safe message.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/qafleet/fleetd/fleet"
)

// Status is what /api/status reports; the daemon provides it.
type Status struct {
	Dial        string         `json:"dial"`
	Paused      bool           `json:"paused"`
	Running     []string       `json:"running"`
	Specialists map[string]any `json:"specialists"`
	Outbox      int            `json:"outbox"`
	StartedAt   time.Time      `json:"started_at"`
	Node        *Node          `json:"node,omitempty"`
	Posting     *Posting       `json:"posting,omitempty"`
	// Starved names each scheduled specialist that has not run in three of
	// its periods, with why (the triggers' fair share: its start waits for
	// a free slot, or the last refusal); absent when none is.
	Starved map[string]string `json:"starved,omitempty"`
}

// Posting is the daemon's view of posting to the log: paused while the
// sponsor cannot pay for gas (findings are queued in the outbox, and posted
// once it is funded).
type Posting struct {
	Paused  bool      `json:"paused"`
	Since   time.Time `json:"since,omitzero"`    // when the pause began
	Sponsor string    `json:"sponsor,omitempty"` // the key that cannot pay
	Error   string    `json:"error,omitempty"`
}

// Node is the daemon's view of its chain node: while it is down no run
// starts, and the daemon retries it with backoff and catches up when it is
// back.
type Node struct {
	Up      bool      `json:"up"`
	Since   time.Time `json:"since"`           // when it went up or down
	Error   string    `json:"error,omitempty"` // why it is down
	Outages int       `json:"outages"`         // times it went down since the start
}

// Metrics are the daemon's Prometheus series.
type Metrics struct {
	reg      *prometheus.Registry
	started  *prometheus.CounterVec
	skipped  *prometheus.CounterVec
	finished *prometheus.CounterVec
	findings *prometheus.CounterVec
	degraded *prometheus.CounterVec // fleetd_runs_degraded_total
	running  prometheus.Gauge
	nodeUp   prometheus.Gauge
	outages  prometheus.Counter
	posting  prometheus.Gauge
	fuzz     fuzzCollector
	sched    scheduleCollector
}

// ScheduleStat is one specialist's share of the run slots, as /metrics
// exports it (gauges labelled specialist).
type ScheduleStat struct {
	Specialist  string
	Starved     bool          // no run in three of its periods
	Waiting     time.Duration // how long its start has waited for a slot or a run's end; 0: none waits
	LongestWait time.Duration // the longest a held start of it waited before it ran
}

// scheduleCollector reads the triggers' figures at each scrape.
type scheduleCollector struct {
	read atomic.Pointer[func() []ScheduleStat]
}

var (
	schedStarved = prometheus.NewDesc("fleetd_specialist_starved", "1 while a scheduled specialist has not run in three of its periods (see /api/status starved for why).", []string{"specialist"}, nil)
	schedWaiting = prometheus.NewDesc("fleetd_specialist_waiting_seconds", "How long the specialist's start has waited for a free slot or its run's end; 0 when none waits.", []string{"specialist"}, nil)
	schedLongest = prometheus.NewDesc("fleetd_specialist_longest_wait_seconds", "The longest a held start of the specialist waited before it ran.", []string{"specialist"}, nil)
)

func (c *scheduleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{schedStarved, schedWaiting, schedLongest} {
		ch <- d
	}
}

func (c *scheduleCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	for _, s := range (*read)() {
		starved := 0.0
		if s.Starved {
			starved = 1
		}
		ch <- prometheus.MustNewConstMetric(schedStarved, prometheus.GaugeValue, starved, s.Specialist)
		ch <- prometheus.MustNewConstMetric(schedWaiting, prometheus.GaugeValue, s.Waiting.Seconds(), s.Specialist)
		ch <- prometheus.MustNewConstMetric(schedLongest, prometheus.GaugeValue, s.LongestWait.Seconds(), s.Specialist)
	}
}

// SetScheduleStats makes /metrics export the figures read returns at each
// scrape, one entry per specialist; read must be safe from any goroutine.
func (m *Metrics) SetScheduleStats(read func() []ScheduleStat) { m.sched.read.Store(&read) }

// FuzzStat is one fuzz target's figures with one engine, as /metrics
// exports them (gauges labelled target, the corpus key, and engine).
type FuzzStat struct {
	Target      string // the target's corpus key
	Engine      string
	Sessions    int
	ExecsPerSec float64 // the newest session's
	// ExecsPerCPUSec is the newest session's inputs per CPU-second; 0:
	// not measured (the series is left out).
	ExecsPerCPUSec float64
	Coverage       int // edges; 0: the engine has none
	Features       int
	CorpusSize     int
	// SinceNewCoverage is how long ago the newest session that found new
	// coverage ended; negative when none did (the series is left out).
	SinceNewCoverage time.Duration
	CrashStates      int // distinct crash states found
}

// fuzzCollector reads the fuzz statistics at each scrape through the
// function cmd gives it, so the figures are the kept files' (every
// process's sessions), not this process's memory.
type fuzzCollector struct {
	read atomic.Pointer[func() []FuzzStat]
}

var (
	fuzzLabels   = []string{"target", "engine"}
	fuzzSessions = prometheus.NewDesc("fleetd_fuzz_sessions", "Fuzz sessions kept in the statistics, by target and engine.", fuzzLabels, nil)
	fuzzExecs    = prometheus.NewDesc("fleetd_fuzz_execs_per_second", "Inputs per second of the newest fuzz session, by target and engine.", fuzzLabels, nil)
	fuzzCPU      = prometheus.NewDesc("fleetd_fuzz_execs_per_cpu_second", "Inputs per CPU-second of the newest fuzz session (the fuzzing's processor time, its target's included), by target and engine.", fuzzLabels, nil)
	fuzzCov      = prometheus.NewDesc("fleetd_fuzz_coverage_edges", "Edges covered at the end of the newest fuzz session (coverage-guided engines).", fuzzLabels, nil)
	fuzzFeat     = prometheus.NewDesc("fleetd_fuzz_coverage_features", "libFuzzer features at the end of the newest fuzz session.", fuzzLabels, nil)
	fuzzCorpus   = prometheus.NewDesc("fleetd_fuzz_corpus_size", "Inputs in the corpus at the end of the newest fuzz session.", fuzzLabels, nil)
	fuzzSince    = prometheus.NewDesc("fleetd_fuzz_seconds_since_new_coverage", "Seconds since the end of the newest fuzz session that found new coverage.", fuzzLabels, nil)
	fuzzStates   = prometheus.NewDesc("fleetd_fuzz_crash_states", "Distinct crash states the kept fuzz sessions found, by target and engine.", fuzzLabels, nil)
)

func (c *fuzzCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fuzzSessions, fuzzExecs, fuzzCPU, fuzzCov, fuzzFeat, fuzzCorpus, fuzzSince, fuzzStates} {
		ch <- d
	}
}

func (c *fuzzCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	for _, s := range (*read)() {
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Target, s.Engine)
		}
		g(fuzzSessions, float64(s.Sessions))
		g(fuzzExecs, s.ExecsPerSec)
		if s.ExecsPerCPUSec > 0 {
			g(fuzzCPU, s.ExecsPerCPUSec)
		}
		if s.Coverage > 0 {
			g(fuzzCov, float64(s.Coverage))
		}
		if s.Features > 0 {
			g(fuzzFeat, float64(s.Features))
		}
		g(fuzzCorpus, float64(s.CorpusSize))
		if s.SinceNewCoverage >= 0 {
			g(fuzzSince, s.SinceNewCoverage.Seconds())
		}
		g(fuzzStates, float64(s.CrashStates))
	}
}

// SetFuzzStats makes /metrics export the fuzz statistics read returns at
// each scrape; read must be safe to call from any goroutine and return
// one entry per target and engine.
func (m *Metrics) SetFuzzStats(read func() []FuzzStat) { m.fuzz.read.Store(&read) }

// NewMetrics registers the series on a fresh registry (no global state).
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.started = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetd_runs_started_total", Help: "Runs started, by specialist."}, []string{"specialist"})
	m.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetd_runs_skipped_total", Help: "Triggers that did not start a run, by specialist."}, []string{"specialist"})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetd_runs_finished_total", Help: "Runs finished, by specialist and outcome."}, []string{"specialist", "outcome"})
	m.degraded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetd_runs_degraded_total", Help: "Runs that fell back from a capability (a fuzz engine that could not build), by specialist and component; the cause is in the run's footer (fleetd runs show)."}, []string{"specialist", "component"})
	m.findings = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetd_findings_total", Help: "Findings reported, by specialist."}, []string{"specialist"})
	m.running = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetd_runs_running", Help: "Runs in flight."})
	m.nodeUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetd_node_up", Help: "1 while the chain node answers, 0 while it is down (no run starts)."})
	m.outages = prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetd_node_outages_total", Help: "Times the chain node went down (or was down at start)."})
	m.posting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetd_posting_paused", Help: "1 while posting to the log is paused because the sponsor cannot pay for gas (findings wait in the outbox)."})
	m.reg.MustRegister(m.started, m.skipped, m.finished, m.degraded, m.findings, m.running, m.nodeUp, m.outages, m.posting, &m.fuzz, &m.sched,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// SetNodeUp records whether the chain node answers; a change to down
// counts an outage.
func (m *Metrics) SetNodeUp(up, wentDown bool) {
	if up {
		m.nodeUp.Set(1)
	} else {
		m.nodeUp.Set(0)
	}
	if wentDown {
		m.outages.Inc()
	}
}

// SetPostingPaused records whether posting is paused for a sponsor run dry.
func (m *Metrics) SetPostingPaused(paused bool) {
	if paused {
		m.posting.Set(1)
	} else {
		m.posting.Set(0)
	}
}

// Observe records a runner event.
func (m *Metrics) Observe(e fleet.RunnerEvent) {
	switch e.Kind {
	case "started":
		m.started.WithLabelValues(e.Specialist).Inc()
		m.running.Inc()
	case "skipped":
		m.skipped.WithLabelValues(e.Specialist).Inc()
	case "finished":
		m.running.Dec()
		m.finished.WithLabelValues(e.Specialist, string(e.Result.Outcome)).Inc()
		m.findings.WithLabelValues(e.Specialist).Add(float64(e.Result.Totals.Findings))
		for _, d := range e.Result.Degraded {
			m.degraded.WithLabelValues(e.Specialist, d.Component).Inc()
		}
	}
}

// Server is the daemon's HTTP server.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Start listens on addr (port 0 picks one) and serves until Shutdown.
func Start(addr string, m *Metrics, status func() Status, log *slog.Logger) (*Server, error) {
	return StartWith(Options{Addr: addr, Metrics: m, Status: status, Logger: log})
}

// Options configure StartWith.
type Options struct {
	Addr    string // port 0 picks one
	Metrics *Metrics
	Status  func() Status
	// Console serves every path the server does not (the operator's
	// console); nil: those paths are 404.
	Console http.Handler
	// OnShutdown runs when Shutdown begins, before the server waits for
	// handlers: it must end long-lived ones (the console's SSE streams).
	OnShutdown func()
	Logger     *slog.Logger

	// Limits against hostile clients; zero takes the default. A client
	// gets ReadHeaderTimeout (5 s) to send its headers (slowloris),
	// ReadTimeout (30 s) for the whole request with its body (a body
	// trickled in), at most MaxHeaderBytes (64 KiB; 431 past it) of
	// headers and MaxBodyBytes (1 MiB; 413 past it) of body; an idle
	// keep-alive connection is closed after IdleTimeout (2 min). The
	// console's streams are not cut: the read deadline ends once a
	// request is read, and there is no write timeout.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxBodyBytes      int64
}

// The defaults of Options' limits.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxBodyBytes      = 1 << 20
)

func (o *Options) defaults() {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
}

// limitBodies refuses a request whose declared body is over max with 413
// before reading it, and cuts any body at max (the handler's read fails and
// the server answers 413 on the connection it then closes).
func limitBodies(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, max), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

// StartWith listens on o.Addr and serves until Shutdown.
func StartWith(o Options) (*Server, error) {
	o.defaults()
	addr, m, status, log := o.Addr, o.Metrics, o.Status, o.Logger
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err := json.NewEncoder(w).Encode(status()); err != nil {
			log.Error("encode status", "err", err)
		}
	})
	if o.Console != nil {
		mux.Handle("/", o.Console)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{srv: &http.Server{
		Handler: limitBodies(o.MaxBodyBytes, mux), ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
		IdleTimeout: o.IdleTimeout, MaxHeaderBytes: o.MaxHeaderBytes,
	}, ln: ln, done: make(chan error, 1)}
	if o.OnShutdown != nil {
		s.srv.RegisterOnShutdown(o.OnShutdown)
	}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Shutdown stops the server, bounded by ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; err == nil {
		err = serr
	}
	return err
}
