package qatools

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// movingDial is a dial the test moves between writes.
type movingDial struct{ d atomic.Int32 }

func (m *movingDial) Dial() (fleet.Dial, error) { return fleet.Dial(m.d.Load()), nil }

type brokenDial struct{}

func (brokenDial) Dial() (fleet.Dial, error) { return fleet.Propose, errors.New("unreadable") }

// TestPageWritesFollowTheDialAndTheBudget: at observe every page write is
// held and nothing is spent; at exercise each spends one write of the
// run's budget, and once it is spent the rest are held; the dial is read
// at every write; every write is recorded with method, URL and why.
func TestPageWritesFollowTheDialAndTheBudget(t *testing.T) {
	var dial movingDial
	meter := sandbox.NewMeter(fleet.Budget{MaxWrites: 2, MaxPageWrites: 2})
	p := NewPageWrites(&dial, meter)
	if err := p.Decide("POST", "http://a/x", "page"); err == nil || !strings.Contains(err.Error(), "observe") {
		t.Fatalf("a write at observe: %v", err)
	}
	dial.d.Store(int32(fleet.Exercise))
	for i := range 2 {
		if err := p.Decide("DELETE", "http://a/y", "proxy"); err != nil {
			t.Fatalf("write %d within the budget: %v", i, err)
		}
	}
	if err := p.Decide("PUT", "http://a/z", "page"); err == nil || !errors.Is(err, fleet.ErrBudget) {
		t.Fatalf("a write past the budget: %v", err)
	}
	if err := p.Decide("WEBSOCKET", "wss://a/s", "proxy"); err == nil {
		t.Fatal("a WebSocket past the budget was let through")
	}
	if got := meter.Used(fleet.ResWrites); got != 2 {
		t.Errorf("spent %d writes, want 2", got)
	}
	dial.d.Store(int32(fleet.Observe)) // lowered mid-run: the next write is held
	meter2 := sandbox.NewMeter(fleet.Budget{})
	p2 := NewPageWrites(&dial, meter2)
	if err := p2.Decide("POST", "http://a/", "page"); err == nil || meter2.Used(fleet.ResWrites) != 0 {
		t.Fatalf("a write after the dial went down: %v, spent %d", err, meter2.Used(fleet.ResWrites))
	}
	log := p.Drain()
	want := []struct {
		method string
		held   bool
	}{{"POST", true}, {"DELETE", false}, {"DELETE", false}, {"PUT", true}, {"WEBSOCKET", true}}
	if len(log) != len(want) {
		t.Fatalf("recorded %+v", log)
	}
	for i, w := range want {
		if log[i].Method != w.method || log[i].Held != w.held || log[i].URL == "" || (w.held && log[i].Reason == "") {
			t.Errorf("record %d = %+v, want %s held=%v", i, log[i], w.method, w.held)
		}
	}
	if len(p.Drain()) != 0 {
		t.Error("Drain did not forget")
	}
	// An unreadable dial is observe.
	pb := NewPageWrites(brokenDial{}, sandbox.NewMeter(fleet.Budget{}))
	if err := pb.Decide("POST", "http://a/", "page"); err == nil {
		t.Errorf("an unreadable dial let a write through: %v", err)
	}
	// A page that loops on writes cannot grow the record without end.
	for range maxPageWrites + 50 {
		pb.Decide("POST", "http://a/", "page")
	}
	if got := pb.Drain(); len(got) != maxPageWrites+1 || !strings.Contains(got[maxPageWrites].Reason, "51 more") {
		t.Errorf("kept %d records, last %+v", len(got), got[len(got)-1])
	}
}

// TestPageWritesLeaveThePlaybookItsShareAndTheUndoItsReserve: at exercise
// a page that tries 100 writes spends at most its share of max_writes
// (half by default, max_page_writes when set) and never the write kept for
// the DELETE of what a qa_submit POST created, even when that POST's
// writes_left answer came before the page's writes: the playbook's own
// writes and the undo still go through.
func TestPageWritesLeaveThePlaybookItsShareAndTheUndoItsReserve(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	for n, tc := range []struct {
		name      string
		budget    fleet.Budget
		pageSent  int // page writes sent of the 100 tried
		playbook  int // the playbook's POSTs after the page, besides the undo
		heldCause string
	}{
		// 48 writes: 1 POST that creates (its DELETE reserved), 24 for
		// the page, 22 more POSTs, 1 DELETE.
		{"default share", fleet.Budget{MaxWrites: 48}, 24, 22, "max_page_writes"},
		// The share is all of max_writes: the reserve alone holds.
		{"max_page_writes as large as max_writes", fleet.Budget{MaxWrites: 48, MaxPageWrites: 48}, 46, 0, "reserved for the run's undo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, reg := h.newRun(fmt.Sprintf("r-share-%d", n), tc.budget)
			pw := NewPageWrites(h.ctl, run.Meter)
			out, err := h.call(reg, "qa_submit", map[string]any{"url": h.web.URL + "/items", "fields": map[string]any{"a": "1"}})
			if err != nil || out.Verdict != fleet.VerdictOK || out.Result["created"] == nil {
				t.Fatalf("the POST that creates: %s %v %v", out.Verdict, out.Result, err)
			}
			if left := out.Result["writes_left"]; left != uint64(47) {
				t.Fatalf("writes_left after the POST %v, want 47", left)
			}
			sent, held := 0, 0
			var cause string
			for i := range 100 {
				if err := pw.Decide("POST", fmt.Sprintf("%s/page/%d", h.web.URL, i), "page"); err != nil {
					held++
					cause = err.Error()
				} else {
					sent++
				}
			}
			if sent != tc.pageSent || held != 100-tc.pageSent {
				t.Errorf("the page sent %d and held %d of 100 writes, want %d sent", sent, held, tc.pageSent)
			}
			if !strings.Contains(cause, tc.heldCause) {
				t.Errorf("the held writes' reason %q does not name %q", cause, tc.heldCause)
			}
			for i := range tc.playbook {
				out, err := h.call(reg, "qa_submit", map[string]any{"url": h.web.URL + "/echo", "fields": map[string]any{"n": fmt.Sprint(i)}})
				if err != nil || out.Verdict != fleet.VerdictOK {
					t.Fatalf("the playbook's write %d after the page: %s %v %v", i, out.Verdict, out.Result.Err(), err)
				}
			}
			out, err = h.call(reg, "qa_submit", map[string]any{"url": h.web.URL + "/items/7", "method": "DELETE"})
			if err != nil || out.Verdict != fleet.VerdictOK {
				t.Fatalf("the undo's DELETE after the page: %s %v %v", out.Verdict, out.Result, err)
			}
			if used := run.Meter.Used(fleet.ResWrites); used != 48 {
				t.Errorf("writes used %d, want all 48", used)
			}
			if r := run.Meter.Reserved(fleet.ResWrites); r != 0 {
				t.Errorf("%d writes still reserved after the DELETE", r)
			}
		})
	}
}

// TestPageWritesCreated: what the answer to a page write the gate let
// through names as created becomes deletable by the run's qa_submit, and
// nothing else does: not a name for a write the gate held or never saw,
// not one off the write's origin, not a second name for one write.
func TestPageWritesCreated(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	run, reg := h.newRun("r-page-created", fleet.Budget{MaxWrites: 5})
	var dial movingDial
	p := NewPageWrites(&dial, run.Meter)
	run.PageWrites = p
	post, item := h.web.URL+"/items", h.web.URL+"/items/7"
	if p.Decide("POST", post, "page") == nil {
		t.Fatal("a write at observe was let through")
	}
	if p.Created("POST", post, item) {
		t.Error("a held write's answer recorded as created")
	}
	dial.d.Store(int32(fleet.Exercise))
	if p.Created("POST", h.web.URL+"/other", item) {
		t.Error("an answer to a write never decided recorded as created")
	}
	if err := p.Decide("POST", post, "page"); err != nil {
		t.Fatal(err)
	}
	if p.Created("POST", post, "http://elsewhere.test/items/7") {
		t.Error("a created URL off the write's origin recorded")
	}
	if !p.Created("POST", post, item) {
		t.Fatal("the allowed write's created URL not recorded")
	}
	if p.Created("POST", post, h.web.URL+"/items/8") {
		t.Error("a second created URL for one allowed write recorded")
	}
	out, err := h.call(reg, "qa_submit", map[string]any{"url": h.web.URL + "/items/8", "method": "DELETE"})
	if err != nil || out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "only of what this run") {
		t.Errorf("DELETE of what no write of the run created: %s %v %v", out.Verdict, out.Result, err)
	}
	out, err = h.call(reg, "qa_submit", map[string]any{"url": item, "method": "DELETE"})
	if err != nil || out.Verdict != fleet.VerdictOK {
		t.Errorf("DELETE of what an allowed page write created: %s %v %v", out.Verdict, out.Result, err)
	}
}
