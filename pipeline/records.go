package pipeline

import (
	"context"
	"errors"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/triage"
)

// Every post to the log goes through package poster; these adapt a poster
// to the one-method interface each consumer declares (fixer.Poster,
// triage.Poster). qa_report's (qatools.Reporter) is the fleet poster itself
// (runner.NewEnv).

// FixRecords posts the fix stage's records (fixer.Poster) as formatted (a
// record's ref= names its cluster: no fingerprint is stamped), keyed by
// text, so the same record posted by two processes (the daemon and `fleetd
// fix --poll`) lands once.
type FixRecords struct{ P *poster.Poster }

// Post returns the record's index, or nil when it is acknowledged without
// one: queued in the outbox, or already on the log.
func (r FixRecords) Post(ctx context.Context, f fleet.Finding) (*uint64, error) {
	text, err := fleet.Format(f)
	if err != nil {
		return nil, err
	}
	res, err := r.P.Post(ctx, poster.Record{Text: text, Source: f.Source, Keying: poster.ByText})
	if err != nil || res.Entry == nil {
		return nil, err
	}
	return &res.Entry.Index, nil
}

// MetaPoster posts triage's meta summaries (triage.Poster), keyed by text:
// triage in two processes at one head writes one summary, and it lands
// once. Status is what happened to the last one.
type MetaPoster struct {
	P      *poster.Poster // nil: no fleet key to post as
	Status poster.Status
}

// Post posts text as triage's meta summary.
func (m *MetaPoster) Post(ctx context.Context, text string) error {
	if m.P == nil {
		return ErrNoFleetKey
	}
	res, err := m.P.Post(ctx, poster.Record{Text: text, Source: triage.MetaSource, Keying: poster.ByText})
	m.Status = res.Status
	return err
}

// ErrNoFleetKey: triage has a summary to post and no identity to post it as.
var ErrNoFleetKey = errors.New("no chain.fleet_key_file to post the meta summary with")
