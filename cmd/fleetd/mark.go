package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/triage"
)

// errBadMark marks a correction the operator asked for wrongly (a bad
// index or kind, an entry that does not exist), as opposed to one the
// chain would not take.
var errBadMark = errors.New("bad correction")

// markEntry appends an operator's correction about entry index: `fleetd
// findings mark` and the console's mark control. It posts through the
// poster as the identity of c's key file (sponsored when a sponsor key is
// configured), keyed as one action (poster.Once), and records the
// correction in the audit log as user. When the node cannot be reached the
// correction is queued in the outbox (whether entry index exists is then
// not checked here; triage ignores a correction of no entry). outbox is
// the outbox it went through. Errors wrap errBadMark when the request
// itself is wrong.
func (a findingsCommands) markEntry(ctx context.Context, c conn, index, what, user string) (res poster.Result, outbox string, err error) {
	corr, err := triage.ParseMark(index, what)
	if err != nil {
		return poster.Result{}, "", fmt.Errorf("%w: %w", errBadMark, err)
	}
	text, err := corr.Format()
	if err != nil {
		return poster.Result{}, "", fmt.Errorf("%w: %w", errBadMark, err)
	}
	if c.keyFile == "" {
		return poster.Result{}, "", errors.New("findings mark: pass --key-file or set chain.fleet_key_file (corrections count only from trusted senders)")
	}
	identity, err := chain.LoadKey(c.keyFile)
	if err != nil {
		return poster.Result{}, "", err
	}
	cl, log, err := a.feedbackLog(ctx, c)
	switch {
	case errors.Is(err, chain.ErrUnreachable):
		log = nil // queued: posted when the node answers again
	case err != nil:
		return poster.Result{}, "", err
	default:
		defer cl.Close()
		if n, err := log.Count(ctx); err == nil && corr.Ref >= n {
			return poster.Result{}, "", fmt.Errorf("%w: findings mark: entry %d does not exist (the log has %d)", errBadMark, corr.Ref, n)
		}
	}
	var sponsor *chain.Key
	if c.sponsorKeyFile != "" {
		if sponsor, err = chain.LoadKey(c.sponsorKeyFile); err != nil {
			return poster.Result{}, "", err
		}
	}
	logAddr, _ := fleet.ParseAddress(c.feedbackLog) // feedbackLog parsed it
	p, err := a.recordPoster(identity, sponsor, logAddr, log)
	if err != nil {
		return poster.Result{}, "", err
	}
	res, err = p.Post(ctx, poster.Record{Text: text, Source: "qa-operator", Keying: poster.Once})
	if err != nil {
		return res, p.OutboxDir(), err
	}
	audit := fmt.Sprintf("entry %d %s: correction %s", corr.Ref, what, res.Status)
	if res.Entry != nil {
		audit = fmt.Sprintf("entry %d %s: correction entry %d, tx %s", corr.Ref, what, res.Entry.Index, res.Entry.Tx)
	}
	return res, p.OutboxDir(), a.control().Record("mark", audit, user)
}
