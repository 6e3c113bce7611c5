package fleet

import (
	"errors"
	"strings"
)

// Record appends an audit record for an operator action that is not a dial
// or kill-switch change (a manual run, a triage pass, a correction), so
// audit.jsonl holds every control an operator used, and who used it.
func (c *Control) Record(action, reason, user string) error {
	if strings.TrimSpace(action) == "" {
		return errors.New("audit: an action is required")
	}
	return c.audit(AuditRecord{User: user, Action: action, Reason: reason})
}
