package qatools

import (
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

// maxPageWrites bounds the page writes kept between two turns: a page
// that loops on fetch POST cannot grow the run record without end (the
// count still goes on, in Dropped).
const maxPageWrites = 200

// PageWrites is the dial's word on the writes a rendered page tries (a
// script's POST, PUT or DELETE, a beacon, a form, a WebSocket): the same
// rule as for the tools. At observe every one is held. From exercise up
// each spends one write from the run's meter, as qa_submit does, and is
// held once the budget is spent. Pages get a share of the budget, not all
// of it: at most max_page_writes (default half of max_writes, Budget.
// PageWriteShare), and never the writes the run keeps for its undo (the
// DELETE of what its qa_submit POSTs created, sandbox.Meter.Reserve), so
// a busy page leaves the playbook its own writes and the undo its
// DELETEs. The dial is read at every write, so lowering it takes effect at
// the next request. Every write, sent or held, is kept for the run record
// (Drain).
type PageWrites struct {
	dial  fleet.DialSource
	meter fleet.Meter
	// share is the most page writes sent in the run, when limited.
	share   uint64
	limited bool

	mu      sync.Mutex
	sent    uint64
	log     []trajectory.PageWrite
	dropped int
	allowed map[string]int  // "METHOD url" of the writes let through, not yet answered
	created map[string]bool // what their answers named as created (Created)
}

// budgeted is a meter that says its budget (sandbox.Meter).
type budgeted interface{ Limits() fleet.Budget }

// spareSpender is a meter that keeps reserved writes (sandbox.Meter).
type spareSpender interface {
	SpendSpare(r fleet.Resource, n uint64) error
}

// NewPageWrites decides page writes under dial, spending from meter: at
// most the page writes' share of the meter's budget, and only what the
// meter does not keep in reserve.
func NewPageWrites(dial fleet.DialSource, meter fleet.Meter) *PageWrites {
	p := &PageWrites{dial: dial, meter: meter}
	if b, ok := meter.(budgeted); ok {
		p.share, p.limited = b.Limits().PageWriteShare()
	}
	return p
}

// Decide returns nil when the write may be sent (one write was spent), or
// an error saying why it is held. via names the fence that asks (the
// tab, the browser's proxy), for the record.
func (p *PageWrites) Decide(method, rawURL, via string) error {
	err := p.decide()
	w := trajectory.PageWrite{Method: method, URL: rawURL, Via: via}
	if err != nil {
		w.Held, w.Reason = true, err.Error()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		if p.allowed == nil {
			p.allowed = map[string]int{}
		}
		p.allowed[writeKey(method, rawURL)]++
	}
	if len(p.log) < maxPageWrites {
		p.log = append(p.log, w)
	} else {
		p.dropped++
	}
	return err
}

func writeKey(method, rawURL string) string { return strings.ToUpper(method) + " " + rawURL }

// Created records that the answer to a write this gate let through (method
// and rawURL as Decide was asked) names created as the resource it made
// (crawl.CreatedURL): the run's qa_submit may then DELETE it, and the
// probe's undo does. It reports false, recording nothing, for a write the
// gate did not let through (or one already answered) or a created URL off
// the write's origin: only what the run itself created becomes deletable.
func (p *PageWrites) Created(method, rawURL, created string) bool {
	if p == nil || created == "" {
		return false
	}
	w, err1 := url.Parse(rawURL)
	c, err2 := url.Parse(created)
	if err1 != nil || err2 != nil || w.Host == "" || c.Scheme != w.Scheme || c.Host != w.Host {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := writeKey(method, rawURL)
	if p.allowed[k] == 0 {
		return false
	}
	if p.allowed[k]--; p.allowed[k] == 0 {
		delete(p.allowed, k)
	}
	if p.created == nil {
		p.created = map[string]bool{}
	}
	p.created[created] = true
	return true
}

// createdHere reports whether an allowed page write's answer named u.
func (p *PageWrites) createdHere(u string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created[u]
}

func (p *PageWrites) decide() error {
	d, err := p.dial.Dial()
	if err != nil {
		return fmt.Errorf("held: the dial cannot be read (%v): observe assumed", err)
	}
	if !d.Allows(fleet.Exercise) {
		return fmt.Errorf("held: the dial is %s, a page's writes need exercise", d)
	}
	// One at a time: the share is counted with the spend.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limited && p.sent >= p.share {
		return fmt.Errorf("held: the page writes' share of the run's writes (%d, max_page_writes) is spent: %w", p.share, fleet.ErrBudget)
	}
	if m, ok := p.meter.(spareSpender); ok {
		err = m.SpendSpare(fleet.ResWrites, 1)
	} else {
		err = p.meter.Spend(fleet.ResWrites, 1)
	}
	if err != nil {
		return fmt.Errorf("held: %w", err)
	}
	p.sent++
	return nil
}

// Drain returns the writes decided since the last Drain and forgets them;
// past maxPageWrites a last entry counts the ones not kept.
func (p *PageWrites) Drain() []trajectory.PageWrite {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.log
	if p.dropped > 0 {
		out = append(out, trajectory.PageWrite{Method: "…", URL: "…", Reason: fmt.Sprintf("%d more page writes, held or sent, not listed", p.dropped)})
	}
	p.log, p.dropped = nil, 0
	return out
}
