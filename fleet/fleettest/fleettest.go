// Package fleettest holds fakes for tests of code built on fleet: a scripted
// model and helpers to build tools. Fakes, not generated mocks.
package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/qafleet/fleetd/fleet"
)

// Script is a Model that plays a fixed list of steps, one per Next call, and
// then declares the run done. Each entry is a Step, an error, or a func that
// computes the step from the state (to react to earlier results).
type Script struct {
	mu     sync.Mutex
	Steps  []any
	States []fleet.State // a copy of the state at every call
	Usage  fleet.Usage   // charged on every step
}

// Next implements fleet.Model.
func (s *Script) Next(ctx context.Context, st *fleet.State) (fleet.Step, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *st
	cp.History = append([]fleet.Exchange(nil), st.History...)
	s.States = append(s.States, cp)
	if err := ctx.Err(); err != nil {
		return fleet.Step{}, err
	}
	n := len(s.States) - 1
	if n >= len(s.Steps) {
		return fleet.Step{Done: true, Summary: "script finished", Usage: s.Usage}, nil
	}
	switch v := s.Steps[n].(type) {
	case fleet.Step:
		v.Usage = s.Usage
		return v, nil
	case error:
		return fleet.Step{Usage: s.Usage}, v
	case func(*fleet.State) (fleet.Step, error):
		step, err := v(st)
		step.Usage = s.Usage
		return step, err
	}
	panic(fmt.Sprintf("fleettest.Script: step %d has unsupported type %T", n, s.Steps[n]))
}

// Calls returns a Step calling tool with args (marshalled to JSON).
func Calls(tool string, args any) fleet.Step {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return fleet.Step{Call: &fleet.Call{Tool: tool, Args: b}}
}

// Raw returns a Step calling tool with raw argument bytes (possibly invalid).
func Raw(tool, args string) fleet.Step {
	return fleet.Step{Call: &fleet.Call{Tool: tool, Args: json.RawMessage(args)}}
}

// Tool returns a tool at rung whose handler calls fn with the raw args and
// counts its calls.
func Tool(name string, rung fleet.Dial, fn func(ctx context.Context, args json.RawMessage) (fleet.Result, error)) (fleet.Tool, *int) {
	var mu sync.Mutex
	calls := new(int)
	return fleet.Tool{Name: name, Rung: rung, Description: name, Handler: fleet.HandlerFunc(func(ctx context.Context, a json.RawMessage) (fleet.Result, error) {
		mu.Lock()
		*calls++
		mu.Unlock()
		return fn(ctx, a)
	})}, calls
}

// Dial is a fixed dial setting.
type Dial fleet.Dial

// Dial implements fleet.DialSource.
func (d Dial) Dial() (fleet.Dial, error) { return fleet.Dial(d), nil }

// Meter is a fleet.Meter over a Budget with a settable clock, for loop tests.
type Meter struct {
	mu      sync.Mutex
	Budget  fleet.Budget
	used    map[fleet.Resource]uint64
	Expired bool // the deadline has passed
}

// Spend implements fleet.Meter.
func (m *Meter) Spend(r fleet.Resource, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used == nil {
		m.used = map[fleet.Resource]uint64{}
	}
	if lim := m.Budget.Limit(r); lim > 0 && m.used[r]+n > lim {
		return &fleet.BudgetError{Resource: r, Limit: lim, Used: m.used[r], Want: n}
	}
	m.used[r] += n
	return nil
}

// Deadline implements fleet.Meter.
func (m *Meter) Deadline() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Expired {
		return &fleet.BudgetError{Resource: fleet.ResTime, Limit: uint64(m.Budget.Deadline)}
	}
	return nil
}

// Used implements fleet.Meter.
func (m *Meter) Used(r fleet.Resource) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used[r]
}
