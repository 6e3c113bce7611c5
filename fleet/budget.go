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
	MaxTurns  int           `yaml:"max_turns" json:"max_turns,omitempty"`
	MaxWrites int           `yaml:"max_writes" json:"max_writes,omitempty"`
	MaxTokens int64         `yaml:"max_tokens" json:"max_tokens,omitempty"`
	MaxWei    uint64        `yaml:"max_wei" json:"max_wei,omitempty"`
	Deadline  time.Duration `yaml:"deadline" json:"deadline,omitempty"`
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
}

func (e *BudgetError) Error() string {
	if e.Resource == ResTime {
		return fmt.Sprintf("budget exhausted: run deadline of %s passed", time.Duration(e.Limit))
	}
	return fmt.Sprintf("budget exhausted: %s limit %d, used %d, asked for %d more", e.Resource, e.Limit, e.Used, e.Want)
}

// Unwrap makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Unwrap() error { return ErrBudget }

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
	if b.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("%s.max_tokens: must not be negative, got %d", prefix, b.MaxTokens))
	}
	if b.Deadline < 0 {
		errs = append(errs, fmt.Errorf("%s.deadline: must not be negative, got %s", prefix, b.Deadline))
	}
	return errors.Join(errs...)
}
