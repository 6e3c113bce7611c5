package fleet

// DailyUsage is what the fleet spent today (UTC) and the day's limits
// (zero: unlimited).
type DailyUsage struct {
	Date   string
	Runs   int
	Writes uint64
	Tokens uint64
	Wei    uint64
	Limits Budget
}

// Usage returns today's spend. A ledger from an earlier day reads as zero.
func (d *DailyBudget) Usage() DailyUsage {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.roll()
	return DailyUsage{Date: d.day.Date, Runs: d.day.Runs, Writes: d.day.Writes, Tokens: d.day.Tokens, Wei: d.day.Wei, Limits: d.limits}
}
