package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// A correction an operator asks for (`fleetd findings mark REF WHAT
// [--reason R] [--until T]` or the console's mark control) is checked by
// daemon.Correction; errBadMark marks one asked for wrongly.
type markRequest = console.MarkRequest

var errBadMark = fleetdaemon.ErrBadMark

// markEntry appends an operator's correction as the identity of c's key
// file (sponsored when a sponsor key is configured) through daemon.Mark,
// which checks it against the log when the node answers (else it is
// queued unchecked), posts it and records it in the audit log as user.
// outbox is the outbox it went through. Errors wrap errBadMark when the
// request itself is wrong.
func (a findingsCommands) markEntry(ctx context.Context, c conn, m markRequest, user string) (res poster.Result, outbox string, err error) {
	corr, err := fleetdaemon.Correction(m, time.Now())
	if err != nil {
		return poster.Result{}, "", err
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
	}
	tc, err := a.triageConfig(identity)
	if err != nil {
		return poster.Result{}, "", fmt.Errorf("triage config: %w", err)
	}
	mark := fleetdaemon.Mark{Log: log, Triage: tc, Control: a.control(), Poster: func() (*poster.Poster, error) {
		var sponsor *chain.Key
		if c.sponsorKeyFile != "" {
			if sponsor, err = chain.LoadKey(c.sponsorKeyFile); err != nil {
				return nil, err
			}
		}
		logAddr, _ := fleet.ParseAddress(c.feedbackLog) // feedbackLog parsed it
		return a.recordPoster(identity, sponsor, logAddr, log)
	}}
	return mark.Post(ctx, corr, m.What, user)
}
