package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/triage"
)

// Every post to the log goes through package poster; this file picks the
// outbox a poster uses and adapts it to the one-method interface each
// consumer declares (fixer.Poster, triage.Poster). qa_report's
// (qatools.Reporter) is the fleet poster itself (buildEnv).

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

// fixRecords posts the fix stage's records (fixer.Poster) as formatted (a
// record's ref= names its cluster: no fingerprint is stamped), keyed by
// text, so the same record posted by two processes (the daemon and `fleetd
// fix --poll`) lands once.
type fixRecords struct{ p *poster.Poster }

// Post returns the record's index, or nil when it is acknowledged without
// one: queued in the outbox, or already on the log.
func (r fixRecords) Post(ctx context.Context, f fleet.Finding) (*uint64, error) {
	text, err := fleet.Format(f)
	if err != nil {
		return nil, err
	}
	res, err := r.p.Post(ctx, poster.Record{Text: text, Source: f.Source, Keying: poster.ByText})
	if err != nil || res.Entry == nil {
		return nil, err
	}
	return &res.Entry.Index, nil
}

// metaPoster posts triage's meta summaries (triage.Poster), keyed by text:
// triage in two processes at one head writes one summary, and it lands
// once. Status is what happened to the last one.
type metaPoster struct {
	p      *poster.Poster // nil: no fleet key to post as
	Status poster.Status
}

func (m *metaPoster) Post(ctx context.Context, text string) error {
	if m.p == nil {
		return errNoFleetKey
	}
	res, err := m.p.Post(ctx, poster.Record{Text: text, Source: triage.MetaSource, Keying: poster.ByText})
	m.Status = res.Status
	return err
}

// errNoFleetKey: triage has a summary to post and no identity to post it as.
var errNoFleetKey = errors.New("no chain.fleet_key_file to post the meta summary with")
