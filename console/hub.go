package console

import (
	"sync"
	"time"
)

// Event is one thing the live feed shows. Text fields are untrusted.
type Event struct {
	ID         uint64    `json:"id"`
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Specialist string    `json:"specialist,omitempty"`
	RunID      string    `json:"run_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`
	Turn       int       `json:"turn,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	Verdict    string    `json:"verdict,omitempty"`
	Severity   string    `json:"severity,omitempty"`
	Surface    string    `json:"surface,omitempty"`
	State      string    `json:"state,omitempty"`
	Cluster    string    `json:"cluster,omitempty"`
	Text       string    `json:"text,omitempty"`
	Findings   int       `json:"findings,omitempty"`
}

// The event kinds.
const (
	KindRunStarted  = "run_started"
	KindRunSkipped  = "run_skipped"
	KindRunFinished = "run_finished"
	KindTurn        = "turn"
	KindFinding     = "finding" // a finding one of the fleet's runs posted or queued
	KindCluster     = "cluster" // triage: a cluster new, regressed or resolved
	KindControl     = "control" // an operator changed something
	KindResync      = "resync"  // sent to a subscriber that fell behind the ring
)

// feedKind reports whether an event belongs on the live feed by default:
// turns are for run pages (there are too many) and skipped starts are
// noise (a continuous specialist retries); ?kinds= asks for them.
func feedKind(k string) bool { return k != KindTurn && k != KindRunSkipped }

// Hub fans events out to subscribers. Publish never blocks: events go into
// a ring of the newest ones, and subscribers are woken to read what they
// have not seen. It is safe for concurrent use.
type Hub struct {
	mu     sync.Mutex
	ring   []Event // ring[(id-1) % len(ring)] holds event id
	next   uint64  // id of the next event
	wake   chan struct{}
	closed bool
	subs   int
	now    func() time.Time
}

// NewHub returns a hub keeping the newest size events (at least 16).
func NewHub(size int) *Hub {
	return &Hub{ring: make([]Event, max(size, 16)), next: 1, wake: make(chan struct{}), now: time.Now}
}

// Publish assigns e an id and time (when unset) and wakes every subscriber.
// After Close it does nothing.
func (h *Hub) Publish(e Event) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	e.ID = h.next
	if e.Time.IsZero() {
		e.Time = h.now().UTC()
	}
	h.ring[(e.ID-1)%uint64(len(h.ring))] = e
	h.next++
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}

// Close wakes every subscriber for the last time; their Wait returns false.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.wake)
	}
}

// Last returns the id of the newest event (0 when none).
func (h *Hub) Last() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.next - 1
}

// Since appends to dst the events after id still in the ring, oldest first,
// keeping those keep accepts (nil: all). It also returns the id of the
// newest event it looked at (the cursor to pass next time), the wake
// channel to wait on for more (closed by the next Publish or Close), and
// whether events after id were lost (fell out of the ring).
func (h *Hub) Since(dst []Event, id uint64, keep func(*Event) bool) (events []Event, upto uint64, wake <-chan struct{}, lost bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := uint64(1)
	if n := uint64(len(h.ring)); h.next > n {
		first = h.next - n
	}
	lost = id+1 < first
	for i := max(id+1, first); i < h.next; i++ {
		e := &h.ring[(i-1)%uint64(len(h.ring))]
		if keep == nil || keep(e) {
			dst = append(dst, *e)
		}
	}
	return dst, max(id, h.next-1), h.wake, lost
}

// Recent returns up to n of the newest events keep accepts, newest first.
func (h *Hub) Recent(n int, keep func(*Event) bool) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	first := uint64(1)
	if size := uint64(len(h.ring)); h.next > size {
		first = h.next - size
	}
	for i := h.next - 1; i >= first && i > 0 && len(out) < n; i-- {
		e := &h.ring[(i-1)%uint64(len(h.ring))]
		if keep == nil || keep(e) {
			out = append(out, *e)
		}
	}
	return out
}

// Closed reports whether Close was called.
func (h *Hub) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// join counts a subscriber in, refusing past limit (0: no limit).
func (h *Hub) join(limit int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || (limit > 0 && h.subs >= limit) {
		return false
	}
	h.subs++
	return true
}

func (h *Hub) leave() {
	h.mu.Lock()
	h.subs--
	h.mu.Unlock()
}

// Subscribers returns how many SSE clients are connected.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subs
}
