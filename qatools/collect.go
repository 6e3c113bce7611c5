package qatools

import (
	"context"
	"slices"
	"sync"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// Held is what qa_report answers through a Collector that posts nothing:
// the finding was collected, not posted (`fleetd check` without --post).
const Held poster.Status = "held"

// Collector is qa_report's Reporter when the caller wants every finding
// back (`fleetd check` compares them with the log): it keeps each one and,
// with Forward set, passes it on (the fleet's poster), keeping only what
// Forward took.
type Collector struct {
	Forward Reporter // nil: hold every finding
	mu      sync.Mutex
	found   []fleet.Finding
}

var _ Reporter = (*Collector)(nil)

// Report keeps f (after Forward took it, when set).
func (c *Collector) Report(ctx context.Context, f fleet.Finding) (poster.Result, error) {
	if c.Forward != nil {
		res, err := c.Forward.Report(ctx, f)
		if err == nil {
			c.keep(f)
		}
		return res, err
	}
	c.keep(f)
	return poster.Result{Status: Held, FP: fleet.Fingerprint(f)}, nil
}

func (c *Collector) keep(f fleet.Finding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.found = append(c.found, f)
}

// Found returns the findings kept, in the order reported.
func (c *Collector) Found() []fleet.Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.found)
}
