package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
)

// What a run leaves on the platform. Every POST qa_submit sends is kept:
// one whose answer names what it created (qa_submit's "created": a
// Location, or the new object's url or id) is deleted again by UndoWrites
// (qa_submit DELETE, which sends a DELETE only to what the run created);
// one whose answer names nothing is listed as left, as is anything a rule
// reports with LeftOnPlatform (a value it could not restore, a form the
// browser submitted whose answer named nothing). What the answer to a
// browser submission names as created (Rendered.Created, which Submit
// keeps) is deleted as qa_submit's POSTs' are. The list goes into the run's summary, which the run
// record's footer holds, so the operator can clean it up. Room keeps a
// call, and WritesReserved a write, for each DELETE still to send; the
// run's meter keeps that write too (qa_submit reserves it when the POST
// names what it created), so a rendered page's own writes, spent after
// the last writes_left this play saw, cannot take it (qatools.PageWrites).

// trackWrite keeps what a qa_submit call created or removed, and what a
// qa_authz call listed as left on the platform (it undoes the rest of its
// writes itself, qatools.authzUndo).
func (p *Play) trackWrite(tool string, raw json.RawMessage, r fleet.Result) {
	if tool == "qa_authz" {
		for _, s := range Strs(r, "left_on_platform") {
			p.LeftOnPlatform("%s", s)
		}
		if _, ok := r["writes_left"]; ok {
			p.writesLeft = Int(r, "writes_left")
			p.writesKnown = true
		}
		return
	}
	if tool != "qa_submit" || !Answered(r) {
		return
	}
	var a struct{ URL, Method, As string }
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	if _, ok := r["writes_left"]; ok {
		p.writesLeft = Int(r, "writes_left")
		p.writesKnown = true
	}
	st := Status(r)
	switch strings.ToUpper(a.Method) {
	case "", "POST":
		if st < 200 || st > 299 {
			return
		}
		if u := Str(r, "created"); u != "" {
			if !slices.Contains(p.created, u) {
				p.created = append(p.created, u)
			}
			if a.As != "" { // a signed-in identity's: its DELETE goes with that session
				if p.createdAs == nil {
					p.createdAs = map[string]string{}
				}
				p.createdAs[u] = a.As
			}
			return
		}
		if !slices.Contains(p.unnamed, a.URL) {
			p.unnamed = append(p.unnamed, a.URL)
		}
	case "DELETE":
		if st >= 200 && st <= 299 || st == 404 || st == 410 {
			p.undone = append(p.undone, a.URL)
		}
	}
}

// keepCreated keeps what the browser's answers to a submission's writes
// named as created (Rendered.Created: the run's gate let those writes
// through and recorded them, so the run's qa_submit may DELETE them), for
// UndoWrites.
func (p *Play) keepCreated(rd crawl.Rendered) {
	for _, u := range rd.Created {
		if !slices.Contains(p.created, u) {
			p.created = append(p.created, u)
		}
	}
}

// pending are the created URLs not yet deleted.
func (p *Play) pending() []string {
	var out []string
	for _, u := range p.created {
		if !slices.Contains(p.undone, u) {
			out = append(out, u)
		}
	}
	return out
}

// WritesReserved is the number of writes the run keeps for its DELETEs:
// a rule that spends writes stops that many (plus its own spare) short of
// the budget.
func (p *Play) WritesReserved() int { return len(p.pending()) }

// LeftOnPlatform records something the run wrote to the platform and did
// not remove (no way offered, a refusal, no budget left): the run's
// summary lists it under "left on the platform".
func (p *Play) LeftOnPlatform(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(p.left, s) {
		p.left = append(p.left, s)
	}
}

// WritesLeft is the last writes_left a qa_submit or qa_authz answer of the
// run gave, and whether one did.
func (p *Play) WritesLeft() (int, bool) { return p.writesLeft, p.writesKnown }

// Left returns what the run has listed as left on the platform so far.
func (p *Play) Left() []string { return slices.Clone(p.left) }

// UndoWrites deletes what the run's POSTs created (qa_submit DELETE, one
// write and one call each, kept in reserve by Room and WritesReserved) and
// lists what it cannot remove: a DELETE refused or failing, and the POSTs
// whose answers named nothing to delete. A playbook that writes calls it
// last.
func (p *Play) UndoWrites() {
	for _, u := range p.pending() {
		if !p.Can("qa_submit") || p.n+1 > p.limit-reportReserve(p.limit) || p.writesKnown && p.writesLeft < 1 {
			p.LeftOnPlatform("%s, which a POST of this run created (no call or write left to DELETE it)", u)
			continue
		}
		del := map[string]any{"url": u, "method": "DELETE"}
		if as := p.createdAs[u]; as != "" {
			del["as"] = as
		}
		r := p.Call("qa_submit", del)
		if st := Status(r); Answered(r) && (st >= 200 && st <= 299 || st == 404 || st == 410) {
			continue
		}
		p.LeftOnPlatform("%s, which a POST of this run created (DELETE: %s)", u, orErr(r))
	}
	for _, u := range p.unnamed {
		p.LeftOnPlatform("what the POSTs to %s stored, if anything (their answers name nothing to DELETE)", u)
	}
}

func orErr(r fleet.Result) string {
	if Answered(r) {
		return fmt.Sprintf("HTTP %d", Status(r))
	}
	return Clip(r.Err(), 100)
}

// Restore is a resource a PUT or PATCH of the run changed, to be written
// back by the identity that owns it.
type Restore struct {
	URL    string                     // the resource, as written and read
	Shown  string                     // how findings name it: a path with {address}, never an identity's address
	Whose  string                     // whose it is, for a person: "identity b's own resource"
	Method string                     // the write's: PATCH sends the changed fields back, PUT the whole prior object
	As     string                     // the identity whose session writes it back ("" for none)
	Before map[string]json.RawMessage // the resource read just before the write
	Fields []string                   // the fields the write sent
}

// Changed are the fields whose value after (the resource read after the
// write) differs from r.Before's, sorted: a field of Before changed or
// gone, a field the write sent that Before lacked. When after is nil (not
// read, or not a JSON object) they are the fields the write sent, or
// every field of Before when it names none.
func (r Restore) Changed(after map[string]json.RawMessage) []string {
	if after == nil {
		if len(r.Fields) > 0 {
			return slices.Sorted(slices.Values(r.Fields))
		}
		return slices.Sorted(maps.Keys(r.Before))
	}
	var out []string
	for _, f := range slices.Sorted(maps.Keys(r.Before)) {
		if v, ok := after[f]; !ok || !sameJSON(r.Before[f], v) {
			out = append(out, f)
		}
	}
	for _, f := range r.Fields {
		if _, had := r.Before[f]; !had && after[f] != nil && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// RestoreFields writes back what a write changed in r's resource (after:
// the resource read after it) and reads it again to be sure, as r.As: one
// write and two calls. It reports whether the resource holds its prior
// values again; what it could not write back (no call or write left, a
// refusal, other values read back, a field with no prior value) it lists
// as left on the platform, by field name and r.Shown, never a value.
func (p *Play) RestoreFields(r Restore, after map[string]json.RawMessage) bool {
	changed := r.Changed(after)
	if len(changed) == 0 {
		return true
	}
	left := func(fields []string, why string) bool {
		p.LeftOnPlatform("the fields %s of %s (%s) hold what the run's %s wrote (restoring them: %s)", strings.Join(fields, ", "), r.Shown, r.Whose, r.Method, why)
		return false
	}
	back := r.Before
	var none []string // fields with no prior value: listed once, never written back
	if r.Method != "PUT" {
		back = map[string]json.RawMessage{}
		for _, f := range changed {
			if v, ok := r.Before[f]; ok {
				back[f] = v
			} else {
				none = append(none, f)
			}
		}
		if len(none) > 0 {
			left(none, "the field had no value before")
		}
		if len(back) == 0 {
			return false
		}
	}
	if !p.Can("qa_submit") || !p.Can("qa_fetch") || p.n+2 > p.limit-reportReserve(p.limit) || p.writesKnown && p.writesLeft < 1 {
		return left(changed, "no call or write left")
	}
	args := map[string]any{"url": r.URL, "method": r.Method, "enctype": "json", "json": string(Marshal(back))}
	read := map[string]any{"url": r.URL}
	if r.As != "" {
		args["as"], read["as"] = r.As, r.As
	}
	if w := p.Call("qa_submit", args); !Answered(w) || Status(w) > 299 {
		return left(changed, r.Method+": "+orErr(w))
	}
	now := p.Call("qa_fetch", read)
	var again map[string]json.RawMessage
	if !Answered(now) || Status(now) > 299 || json.Unmarshal([]byte(Body(now)), &again) != nil || again == nil {
		return left(changed, "reading it back: "+orErr(now)+", not the resource")
	}
	still := slices.DeleteFunc(r.Changed(again), func(f string) bool { return slices.Contains(none, f) })
	if len(still) > 0 {
		return left(still, "reading it back shows other values")
	}
	return len(none) == 0
}
