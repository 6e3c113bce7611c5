package main

import (
	"fmt"
	"path/filepath"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// Every post to the log goes through package poster; this file picks the
// outbox a poster uses (package pipeline adapts it to the one-method
// interface each consumer declares: FixRecords, MetaPoster).

// recordPoster returns a poster for records posted as identity (relayed and
// paid for by sponsor, when not nil) to the log at logAddr; log is nil when
// the node cannot be reached, and then every record waits in the outbox. The
// fleet identity on the configured log shares the fleet's outbox. Another
// identity (an operator's own key) or another log gets an outbox of its own,
// <data_dir>/outbox/<identity>-<log>, so that no flush ever posts an entry
// under another sender or to another log than it was written for: the next
// post with that identity and log flushes it.
func (a findingsCommands) recordPoster(identity, sponsor *chain.Key, logAddr fleet.Address, log *chain.FeedbackLog) (*poster.Poster, error) {
	dir := a.outboxDir()
	if !a.isFleet(identity.Address(), logAddr) {
		dir = filepath.Join(dir, identity.Address().String()+"-"+logAddr.String())
	}
	return poster.New(poster.Config{Log: log, Identity: identity, Sponsor: sponsor, OutboxDir: dir, DedupeWindow: a.cfg.Poster.DedupeWindow})
}

// noteUnposted tells the operator on stderr why what was not posted now: it
// waits in outbox, or the log already holds it.
func (a findingsCommands) noteUnposted(what string, st poster.Status, outbox string) {
	switch st {
	case poster.Queued:
		by := "the next post with this key and log"
		if outbox == a.outboxDir() {
			by = "the daemon's next start or stop, fleetd reconcile, or the next post as the fleet identity"
		}
		fmt.Fprintf(a.stderr, "fleetd: the feedback log did not answer: %s is queued in %s and is posted by %s\n", what, outbox, by)
	case poster.Deduped:
		fmt.Fprintf(a.stderr, "fleetd: %s is already on the log: not posted again\n", what)
	}
}

// isFleet reports whether identity is the configured fleet key and logAddr
// the configured log.
func (a findingsCommands) isFleet(identity, logAddr fleet.Address) bool {
	cc := a.cfg.Chain
	if cc.FleetKeyFile == "" || cc.FeedbackLog == "" {
		return false
	}
	l, err := fleet.ParseAddress(cc.FeedbackLog)
	if err != nil || l != logAddr {
		return false
	}
	k := a.fleetIdentity()
	return k != nil && k.Address() == identity
}
