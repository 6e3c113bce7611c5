package sandbox

import (
	"sync"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Meter counts what a run spends against its budget. Spend reserves before
// the work happens: a spend that would cross a limit is refused and not
// counted, so the limit is never exceeded, only reached.
type Meter struct {
	mu     sync.Mutex
	limits fleet.Budget
	used   map[fleet.Resource]uint64
	// reserved is owed work the run keeps budget for (a DELETE of what
	// it created): SpendSpare leaves it, Spend may use it.
	reserved map[fleet.Resource]uint64
	start    time.Time
	now      func() time.Time
}

// NewMeter starts metering b from now.
func NewMeter(b fleet.Budget) *Meter {
	return &Meter{limits: b, used: map[fleet.Resource]uint64{}, reserved: map[fleet.Resource]uint64{}, start: time.Now(), now: time.Now}
}

// Spend reserves n of r. It returns a *fleet.BudgetError (wrapping
// fleet.ErrBudget) if that would exceed the limit or the deadline passed.
func (m *Meter) Spend(r fleet.Resource, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.deadlineLocked(); err != nil {
		return err
	}
	limit := m.limits.Limit(r)
	if limit > 0 && m.used[r]+n > limit {
		return &fleet.BudgetError{Resource: r, Limit: limit, Used: m.used[r], Want: n}
	}
	m.used[r] += n
	return nil
}

// SpendSpare spends n of r as Spend does, but only from what is not
// reserved (Reserve): a spender that owes the run nothing (a rendered
// page's own writes) cannot take what the run keeps for its undo.
func (m *Meter) SpendSpare(r fleet.Resource, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.deadlineLocked(); err != nil {
		return err
	}
	limit := m.limits.Limit(r)
	if limit > 0 && m.used[r]+m.reserved[r]+n > limit {
		return &fleet.BudgetError{Resource: r, Limit: limit, Used: m.used[r], Want: n, Reserved: m.reserved[r]}
	}
	m.used[r] += n
	return nil
}

// Reserve keeps n of r for work the run owes (the DELETE of what a POST
// of its created): nothing is spent, but SpendSpare leaves it. Release
// gives it up once the work is done.
func (m *Meter) Reserve(r fleet.Resource, n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserved[r] += n
}

// Release gives up n of r that Reserve kept.
func (m *Meter) Release(r fleet.Resource, n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserved[r] -= min(n, m.reserved[r])
}

// Reserved returns what Reserve keeps of r.
func (m *Meter) Reserved(r fleet.Resource) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserved[r]
}

// Refund gives back n of r reserved by Spend for work that did not happen
// (a refused transaction, a sweep that was not needed).
func (m *Meter) Refund(r fleet.Resource, n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used[r] -= min(n, m.used[r])
}

// Deadline returns an error once the run's wall-clock budget has passed.
func (m *Meter) Deadline() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deadlineLocked()
}

func (m *Meter) deadlineLocked() error {
	if d := m.limits.Deadline; d > 0 && m.now().Sub(m.start) > d {
		return &fleet.BudgetError{Resource: fleet.ResTime, Limit: uint64(d)}
	}
	return nil
}

// Used returns what has been spent of r.
func (m *Meter) Used(r fleet.Resource) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used[r]
}

// Remaining returns what is left of r, and false when r is unlimited.
func (m *Meter) Remaining(r fleet.Resource) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	limit := m.limits.Limit(r)
	if limit == 0 {
		return 0, false
	}
	return limit - min(limit, m.used[r]), true
}

// Limits returns the budget being metered.
func (m *Meter) Limits() fleet.Budget { return m.limits }
