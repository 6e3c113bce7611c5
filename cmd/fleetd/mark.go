package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/triage"
)

// errBadMark marks a correction the operator asked for wrongly (a bad
// index or kind, an entry that does not exist), as opposed to one the
// chain would not take.
var errBadMark = errors.New("bad correction")

// markEntry appends an operator's correction about entry index: `fleetd
// findings mark` and the console's mark control. It posts as the fleet
// identity (sponsored when a sponsor key is configured) and records the
// correction in the audit log as user. Errors wrap errBadMark when the
// request itself is wrong.
func (a *app) markEntry(ctx context.Context, c conn, index, what, user string) (*chain.Submission, string, error) {
	corr, err := triage.ParseMark(index, what)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errBadMark, err)
	}
	text, err := corr.Format()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errBadMark, err)
	}
	if c.keyFile == "" {
		return nil, "", errors.New("findings mark: pass --key-file or set chain.fleet_key_file (corrections count only from trusted senders)")
	}
	identity, err := chain.LoadKey(c.keyFile)
	if err != nil {
		return nil, "", err
	}
	cl, log, err := a.feedbackLog(ctx, c)
	if err != nil {
		return nil, "", err
	}
	defer cl.Close()
	if n, err := log.Count(ctx); err == nil && corr.Ref >= n {
		return nil, "", fmt.Errorf("%w: findings mark: entry %d does not exist (the log has %d)", errBadMark, corr.Ref, n)
	}
	var s *chain.Submission
	if c.sponsorKeyFile != "" {
		sponsor, err := chain.LoadKey(c.sponsorKeyFile)
		if err != nil {
			return nil, "", err
		}
		if s, err = log.SubmitFor(ctx, identity, sponsor, text); err != nil {
			return nil, "", err
		}
	} else if s, err = log.Submit(ctx, identity, text); err != nil {
		return nil, "", err
	}
	if err := a.control().Record("mark", fmt.Sprintf("entry %d %s: correction entry %d, tx %s", corr.Ref, what, s.Index, s.Tx), user); err != nil {
		return s, text, err
	}
	return s, text, nil
}
