package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/httpapi"
)

// How a Node is watched: every CheckEvery while it answers; while it is
// down, after RetryMin, doubling to RetryMax, each wait plus up to half
// again of jitter. AbandonedRetry spaces the reconciliations of runs that
// could not clean up (Watch's whileUp), so a name that keeps failing to
// release is not retried at every check.
var (
	CheckEvery     = 5 * time.Second
	RetryMin       = time.Second
	RetryMax       = 30 * time.Second
	AbandonedRetry = 30 * time.Second
)

// Node is the one watcher of fleetd's chain node, shared by the daemon and
// `fleetd mcp`: it records whether the node answers (/api/status "node",
// /metrics fleetd_node_up), catches up when the node answers for the first
// time or after an outage (OnBack: crashed runs reconciled, records closed,
// the outbox posted), and retries with backoff and jitter while it is down.
// While the node is down no run starts (Starter, Ready): a run would only
// fail on fleetd's own network. Set the fields before the first Check.
type Node struct {
	Ping func(ctx context.Context) error // asks the node once
	// RPC is chain.rpc as configured; hosted nodes put API keys in it, so
	// logs and errors show only its public form (PublicURL).
	RPC     string
	Log     *slog.Logger
	Metrics *httpapi.Metrics          // nil: none
	OnBack  func(ctx context.Context) // nil: nothing to catch up
	checkMu sync.Mutex                // checks and their catch-up do not overlap
	state   nodeState
	// gate orders starts against the node going down: a start holds it
	// shared from its look at the state to the runner's accepting the run
	// (WhileUp), and a check records its answer holding it alone. So once
	// anyone can see the node down, every start that saw it up has been
	// accepted and counted, and none starts after.
	gate sync.RWMutex
}

// nodeState is the node up or down as the last check saw it.
type nodeState struct {
	mu      sync.Mutex
	known   bool
	up      bool
	since   time.Time
	err     string
	outages int
}

// set records a check's result and reports whether the node was up before
// and whether this check changed anything.
func (n *nodeState) set(err error, now time.Time) (wasUp, changed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	wasUp, up := n.up, err == nil
	changed = !n.known || up != n.up
	if changed {
		n.since = now
		if !up {
			n.outages++
		}
	}
	n.known, n.up = true, up
	n.err = ""
	if err != nil {
		n.err = err.Error()
	}
	return wasUp, changed
}

// Up reports whether the node answered the last check (false before the
// first).
func (n *Node) Up() bool {
	n.state.mu.Lock()
	defer n.state.mu.Unlock()
	return n.state.up
}

// ErrNodeDown is why WhileUp did not start anything.
var ErrNodeDown = errors.New("the chain node is down")

// WhileUp calls start if the node answered the last check, and a check
// that finds the node gone waits for start to return before it records
// that (start must not check the node itself).
func (n *Node) WhileUp(start func() error) error {
	n.gate.RLock()
	defer n.gate.RUnlock()
	if !n.Up() {
		return ErrNodeDown
	}
	return start()
}

// Status is the node's state for /api/status.
func (n *Node) Status() *httpapi.Node {
	s := &n.state
	s.mu.Lock()
	defer s.mu.Unlock()
	return &httpapi.Node{Up: s.up, Since: s.since, Error: s.err, Outages: s.outages}
}

// Check asks the node once and records the answer. When the node has just
// come back (or answered for the first time) it runs OnBack before it
// returns; back reports that. Checks do not overlap.
func (n *Node) Check(ctx context.Context) (up, back bool) {
	n.checkMu.Lock()
	defer n.checkMu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := n.Ping(cctx)
	cancel()
	if ctx.Err() != nil {
		return n.Up(), false
	}
	n.gate.Lock()
	wasUp, changed := n.state.set(err, time.Now())
	n.gate.Unlock()
	up = err == nil
	if n.Metrics != nil {
		n.Metrics.SetNodeUp(up, changed && !up)
	}
	switch {
	case changed && up:
		n.log().Info("chain node answers", "rpc", PublicURL(n.RPC))
	case changed && !up:
		n.log().Error("chain node down: no run starts until it answers", "rpc", PublicURL(n.RPC), "err", err)
	}
	back = up && !wasUp
	if back && n.OnBack != nil {
		n.OnBack(ctx)
	}
	return up, back
}

func (n *Node) log() *slog.Logger {
	if n.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return n.Log
}

// Ready is nil when the node answers now, else an error naming it (its
// public URL only) and why: what `fleetd mcp` answers a tool call with
// while the node is down.
func (n *Node) Ready(ctx context.Context) error {
	if up, _ := n.Check(ctx); up {
		return nil
	}
	why := "no answer"
	if st := n.Status(); st.Error != "" {
		why = st.Error
		if n.RPC != "" {
			why = strings.ReplaceAll(why, n.RPC, PublicURL(n.RPC))
		}
	}
	return fmt.Errorf("chain node %s does not answer (%s); fleetd mcp retries it and the tools work once it does: call again later", PublicURL(n.RPC), why)
}

// Watch checks the node until ctx ends: every CheckEvery while it answers
// (then whileUp runs, when set), with backoff and jitter while it is down.
// With untilUp it returns as soon as the node answers (`fleetd mcp`: once
// the node has answered, only run starts check it). The returned func stops
// the watch and waits for it.
func (n *Node) Watch(ctx context.Context, untilUp bool, whileUp func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.watch(ctx, untilUp, whileUp)
	}()
	return func() { cancel(); <-done }
}

func (n *Node) watch(ctx context.Context, untilUp bool, whileUp func(context.Context)) {
	wait := RetryMin
	for {
		if untilUp && n.Up() {
			return
		}
		next := CheckEvery
		if !n.Up() {
			next = wait + time.Duration(rand.Int64N(int64(wait)/2+1))
			wait = min(wait*2, RetryMax)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		if up, back := n.Check(ctx); up && !back {
			wait = RetryMin
			if whileUp != nil {
				whileUp(ctx)
			}
		}
	}
}

// PublicURL is an RPC URL as anyone reading the console or an MCP client
// may see it: scheme and host only. Hosted nodes put API keys in the path,
// the query or the user info.
func PublicURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(hidden)"
	}
	out := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		out += "/…"
	}
	return out
}
