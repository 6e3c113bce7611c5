package fleet_test

import (
	"sync"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

// TestDailyBudgetAcrossProcesses: two DailyBudgets on one data dir stand for
// two processes (the daemon and `fleetd mcp`). Each sees the other's spend
// and neither overwrites it.
func TestDailyBudgetAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	limits := fleet.Budget{MaxWrites: 100}
	daemon := fleet.NewDailyBudget(dir, limits)
	mcp := fleet.NewDailyBudget(dir, limits) // opened before either spent
	var wg sync.WaitGroup
	for i := range 20 {
		d := daemon
		if i%2 == 1 {
			d = mcp
		}
		wg.Go(func() { d.Add(fleet.RunResult{Totals: trajectory.Totals{Writes: 3}}) })
	}
	wg.Wait()
	for name, d := range map[string]*fleet.DailyBudget{"daemon": daemon, "mcp": mcp} {
		if got := d.Remaining(fleet.Budget{}).MaxWrites; got != 40 {
			t.Errorf("%s sees %d writes left, want 40 (60 of 100 spent by both)", name, got)
		}
	}
	mcp.Add(fleet.RunResult{Totals: trajectory.Totals{Writes: 40}})
	if err := daemon.Check(); err == nil {
		t.Error("the daemon does not see the day's budget spent by the other process")
	}
}
