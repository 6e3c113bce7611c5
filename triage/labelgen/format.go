package labelgen

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// FormatName identifies the labelled-log format in its header line.
const FormatName = "fleetd-triage-labelled/v1"

// Log is a labelled feedback log: the entries as the chain would return
// them, each with its ground truth, and a header with the trusted senders
// and every ground-truth cluster's state and priority.
//
// On disk it is JSON Lines: the Header on the first line, then one Entry per
// line in index order. Any log in this format can be evaluated, not only
// generated ones (see the eval test's TRIAGE_EVAL_LOG).
type Log struct {
	Header  Header
	Entries []Entry
}

// Header is the first line of a labelled log.
type Header struct {
	Format  string          `json:"format"`
	Seed    uint64          `json:"seed"`
	Trusted []fleet.Address `json:"trusted"`
	// Now is when the log is evaluated (an hour after the last entry).
	Now time.Time `json:"now"`
	// Clusters holds the ground truth per cluster label.
	Clusters map[string]*Cluster `json:"clusters"`
}

// Cluster is the ground truth about one cluster label.
type Cluster struct {
	Severity string `json:"severity,omitempty"`
	Surface  string `json:"surface,omitempty"`
	// State is open, regressed, resolved or false-positive.
	State string `json:"state"`
	// Priority is what the documented ranking gives a perfect clustering:
	// 0 for resolved and false-positive clusters and for clusters no
	// trusted sender reported (noise, attacks).
	Priority float64 `json:"priority"`
	Trusted  bool    `json:"trusted,omitempty"`
	Count    int     `json:"count,omitempty"`
	Sources  int     `json:"sources,omitempty"`
	Runs     int     `json:"runs,omitempty"`
}

// Entry is one labelled log entry.
type Entry struct {
	Index  uint64        `json:"index"`
	Sender fleet.Address `json:"sender"`
	Time   time.Time     `json:"time"`
	Text   string        `json:"text"`
	// Cluster is the ground-truth cluster label; "" for entries that are not
	// findings (corrections, meta summaries), which clustering ignores.
	Cluster string `json:"cluster,omitempty"`
	// Role says why the generator wrote it: finding, twin, spam, copy,
	// noise, human-report, malformed, attack, correction,
	// forged-correction, meta.
	Role string `json:"role,omitempty"`
}

// TriageEntries returns the entries as triage reads them, without labels.
func (l *Log) TriageEntries() []triage.Entry {
	out := make([]triage.Entry, len(l.Entries))
	for i, e := range l.Entries {
		out[i] = triage.Entry{Index: e.Index, Sender: e.Sender, Time: e.Time, Text: e.Text}
	}
	return out
}

// Write writes l as JSON Lines.
func (l *Log) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l.Header); err != nil {
		return fmt.Errorf("write labelled log header: %w", err)
	}
	for _, e := range l.Entries {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("write labelled entry %d: %w", e.Index, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write labelled log: %w", err)
	}
	return nil
}

// Read reads a log that Write wrote. Entries must be in strictly
// increasing index order.
func Read(r io.Reader) (*Log, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	l := &Log{}
	if err := dec.Decode(&l.Header); err != nil {
		return nil, fmt.Errorf("read labelled log header: %w", err)
	}
	if l.Header.Format != FormatName {
		return nil, fmt.Errorf("read labelled log: format %q, want %q", l.Header.Format, FormatName)
	}
	for {
		var e Entry
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read labelled entry after %d: %w", len(l.Entries), err)
		}
		if n := len(l.Entries); n > 0 && e.Index <= l.Entries[n-1].Index {
			return nil, fmt.Errorf("read labelled log: entry %d after %d", e.Index, l.Entries[n-1].Index)
		}
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}
