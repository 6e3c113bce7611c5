package fleet

import (
	"errors"
	"fmt"
	"time"
)

// Budget is what one run may spend. A zero field means "no limit" for
// counters; Deadline zero means no wall-clock limit. Per-day fleet-wide
// budgets use the same type over a day.
type Budget struct {
	MaxTurns  int `yaml:"max_turns" json:"max_turns,omitempty"`
	MaxWrites int `yaml:"max_writes" json:"max_writes,omitempty"`
	// MaxPageWrites bounds the share of MaxWrites that rendered pages'
	// own writes may spend (qatools.PageWrites); 0: half of MaxWrites, so
	// a busy page leaves the playbook's writes and the undo theirs.
	MaxPageWrites int           `yaml:"max_page_writes" json:"max_page_writes,omitempty"`
	MaxTokens     int64         `yaml:"max_tokens" json:"max_tokens,omitempty"`
	MaxWei        uint64        `yaml:"max_wei" json:"max_wei,omitempty"`
	Deadline      time.Duration `yaml:"deadline" json:"deadline,omitempty"`
}

// Resource names a budgeted quantity.
type Resource string

// The budgeted resources.
const (
	ResTurns  Resource = "turns"
	ResWrites Resource = "writes"
	ResTokens Resource = "tokens"
	ResWei    Resource = "wei"
	ResTime   Resource = "deadline"
)

// ErrBudget is wrapped by every budget refusal; a run that hits it ends with
// outcome budget_exhausted.
var ErrBudget = errors.New("budget exhausted")

// BudgetError says which budget refused and by how much.
type BudgetError struct {
	Resource Resource
	Limit    uint64
	Used     uint64 // already spent
	Want     uint64 // the refused spend
	Reserved uint64 // kept for owed work (an undo), out of reach of this spend
}

func (e *BudgetError) Error() string {
	if e.Resource == ResTime {
		return fmt.Sprintf("budget exhausted: run deadline of %s passed", time.Duration(e.Limit))
	}
	if e.Reserved > 0 {
		return fmt.Sprintf("budget exhausted: %s limit %d, used %d, %d reserved for the run's undo, asked for %d more", e.Resource, e.Limit, e.Used, e.Reserved, e.Want)
	}
	return fmt.Sprintf("budget exhausted: %s limit %d, used %d, asked for %d more", e.Resource, e.Limit, e.Used, e.Want)
}

// Unwrap makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Unwrap() error { return ErrBudget }

// PageWriteShare is how many of the run's writes rendered pages may spend,
// and false when they are unlimited (MaxWrites and MaxPageWrites both 0):
// MaxPageWrites, else half of MaxWrites (rounded down), never more than
// MaxWrites.
func (b Budget) PageWriteShare() (uint64, bool) {
	w := uint64(max(b.MaxWrites, 0))
	switch {
	case b.MaxPageWrites > 0 && w > 0:
		return min(uint64(b.MaxPageWrites), w), true
	case b.MaxPageWrites > 0:
		return uint64(b.MaxPageWrites), true
	case w > 0:
		return w / 2, true
	}
	return 0, false
}

// Limit returns the limit for r (0 = unlimited).
func (b Budget) Limit(r Resource) uint64 {
	switch r {
	case ResTurns:
		return uint64(max(b.MaxTurns, 0))
	case ResWrites:
		return uint64(max(b.MaxWrites, 0))
	case ResTokens:
		return uint64(max(b.MaxTokens, 0))
	case ResWei:
		return b.MaxWei
	case ResTime:
		return uint64(max(b.Deadline, 0))
	}
	return 0
}

// Merge returns b with every non-zero field of o replacing b's: persona
// budget overrides on top of the config's defaults.
func (b Budget) Merge(o Budget) Budget {
	if o.MaxTurns != 0 {
		b.MaxTurns = o.MaxTurns
	}
	if o.MaxWrites != 0 {
		b.MaxWrites = o.MaxWrites
	}
	if o.MaxPageWrites != 0 {
		b.MaxPageWrites = o.MaxPageWrites
	}
	if o.MaxTokens != 0 {
		b.MaxTokens = o.MaxTokens
	}
	if o.MaxWei != 0 {
		b.MaxWei = o.MaxWei
	}
	if o.Deadline != 0 {
		b.Deadline = o.Deadline
	}
	return b
}

// Validate rejects negative limits, naming the field under prefix (e.g. "budget").
func (b Budget) Validate(prefix string) error {
	var errs []error
	if b.MaxTurns < 0 {
		errs = append(errs, fmt.Errorf("%s.max_turns: must not be negative, got %d", prefix, b.MaxTurns))
	}
	if b.MaxWrites < 0 {
		errs = append(errs, fmt.Errorf("%s.max_writes: must not be negative, got %d", prefix, b.MaxWrites))
	}
	if b.MaxPageWrites < 0 {
		errs = append(errs, fmt.Errorf("%s.max_page_writes: must not be negative, got %d", prefix, b.MaxPageWrites))
	}
	if b.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("%s.max_tokens: must not be negative, got %d", prefix, b.MaxTokens))
	}
	if b.Deadline < 0 {
		errs = append(errs, fmt.Errorf("%s.deadline: must not be negative, got %s", prefix, b.Deadline))
	}
	return errors.Join(errs...)
}
