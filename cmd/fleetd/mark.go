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
	"github.com/qafleet/fleetd/triage"
)

// A correction an operator asks for (`fleetd findings mark REF WHAT
// [--reason R] [--until T]` or the console's mark control) is checked by
// daemon.Correction; errBadMark marks one asked for wrongly.
type markRequest = console.MarkRequest

var errBadMark = fleetdaemon.ErrBadMark

// markEntry appends an operator's correction: `fleetd findings mark` and
// the console's mark control. When the node answers, the correction is
// first checked against the log as triage reads it (triage.BuildEngine,
// Engine.CheckCorrection): an entry that is not a finding, a member
// already split or one with nothing to split out is refused and nothing
// is posted. It posts through the poster as the identity of c's key file
// (sponsored when a sponsor key is configured), keyed as one action
// (poster.Once), and records the correction in the audit log as user.
// When the node cannot be reached the correction is queued in the outbox
// unchecked (triage ignores a correction of no entry). outbox is the
// outbox it went through. Errors wrap errBadMark when the request itself
// is wrong.
func (a findingsCommands) markEntry(ctx context.Context, c conn, m markRequest, user string) (res poster.Result, outbox string, err error) {
	corr, err := fleetdaemon.Correction(m, time.Now())
	if err != nil {
		return poster.Result{}, "", err
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
		if err := a.checkCorrection(ctx, log, identity, corr); err != nil {
			return poster.Result{}, "", err
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
	what := m.What
	if corr.Note != "" {
		what += fmt.Sprintf(" (%s)", clip(sanitize(corr.Note), 200))
	}
	if !corr.Until.IsZero() {
		what += " until " + corr.Until.Format(time.RFC3339)
	}
	ref := "entry " + corr.RefString()
	if corr.Cluster != "" {
		ref = "cluster " + corr.Cluster
	}
	audit := fmt.Sprintf("%s %s: correction %s", ref, what, res.Status)
	if res.Entry != nil {
		audit = fmt.Sprintf("%s %s: correction entry %d, tx %s", ref, what, res.Entry.Index, res.Entry.Tx)
	}
	return res, p.OutboxDir(), a.control().Record("mark", audit, user)
}

// checkCorrection triages the whole log (as `fleetd check` does, so a
// daemon holding the triage store is no obstacle) and asks the engine
// whether corr names what it must. Errors wrap errBadMark for a wrong
// request; others are the log's.
func (a findingsCommands) checkCorrection(ctx context.Context, log *chain.FeedbackLog, identity *chain.Key, corr triage.Correction) error {
	cfg, err := a.triageConfig(identity)
	if err != nil {
		return fmt.Errorf("triage config: %w", err)
	}
	e, err := triage.BuildEngine(cfg, func(add func([]triage.Entry) error) error {
		_, err := log.Scan(ctx, 0, add)
		return err
	})
	if err != nil {
		return fmt.Errorf("findings mark: read the log: %w", err)
	}
	if err := e.CheckCorrection(corr); err != nil {
		return fmt.Errorf("%w: findings mark: %w", errBadMark, err)
	}
	return nil
}
