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
// held once the budget is spent. The dial is read at every write, so
// lowering it takes effect at the next request. Every write, sent or held,
// is kept for the run record (Drain).
type PageWrites struct {
	dial  fleet.DialSource
	meter fleet.Meter

	mu      sync.Mutex
	log     []trajectory.PageWrite
	dropped int
	allowed map[string]int  // "METHOD url" of the writes let through, not yet answered
	created map[string]bool // what their answers named as created (Created)
}

// NewPageWrites decides page writes under dial, spending from meter.
func NewPageWrites(dial fleet.DialSource, meter fleet.Meter) *PageWrites {
	return &PageWrites{dial: dial, meter: meter}
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
	if err := p.meter.Spend(fleet.ResWrites, 1); err != nil {
		return fmt.Errorf("held: %w", err)
	}
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
