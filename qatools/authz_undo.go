package qatools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
)

// What one qa_authz call leaves on the platform (issue 33's defect). Its
// checks write: a's update of its own resource (object with write_method),
// an identity's own field (property), a sign-out, and each sign-in. Every
// PUT or PATCH is written back when the call ends, with the identity that
// owns the resource, to the values read just before the write (only the
// fields the write changed; a PUT sends the whole object back); what a
// POST's answer names as created (qatools.CreatedURL, learned as
// qa_submit's POSTs are) is deleted by the identity that created it. What
// cannot be undone (a POST whose answer names nothing, a restore or DELETE
// refused, the accounts the fresh sign-ins made) is returned in the
// result's left_on_platform, each with its reason: the run record holds it,
// a playbook's summary lists it under "Left on the platform", and `fleetd
// runs show` prints it under the call. A write is sent only when the
// budget holds its undo too (authzUndo.room); the budget can still run
// out before the undo (the run's deadline passes, another spender takes
// the last write), and the run can be cancelled mid-call: what was
// written is then still in the result (written: method and URL, the
// fields by name), with what was undone and what is left, because the
// call that ends the run returns its result too (authz).

// authzUndo keeps what one qa_authz call wrote, and undoes it (finish).
type authzUndo struct {
	t       *tools
	pending []authzWrite
	signIns []string // fresh identities signed in (or whose sign-in was cut short after its write)
	written []string // every write sent, by method and URL: sign-ins, a's write, the property write, a sign-out
	addrs   []string // their addresses, which no result names ({address} instead)
	verify  string   // the sign-in's verify URL, as given ("" for the default)
	left    []string
	undone  []string
}

// authzWrite is one write to undo: a restore of fields (PUT, PATCH) or the
// DELETE of what a POST created.
type authzWrite struct {
	url, method, as string
	prior           map[string]json.RawMessage // PUT, PATCH: the resource before the write
	fields          []string                   // PUT, PATCH: the fields the write sent
	created         string                     // POST: what its answer named as created
}

// room reports whether the run's write budget holds n more writes (a
// write and its undo).
func (u *authzUndo) room(n uint64) bool {
	left, limited := u.t.run.Meter.Remaining(fleet.ResWrites)
	return !limited || left >= n
}

// signedIn notes a fresh identity's sign-in, which the platform may keep
// as an account qa_authz cannot remove; cut says why a sign-in that got
// as far as its write did not finish ("" when it did).
func (u *authzUndo) signedIn(id *authzIdentity, cut string) {
	u.signIns = append(u.signIns, id.name)
	if id.addr != "" {
		u.addrs = append(u.addrs, id.addr)
	}
	w := fmt.Sprintf("POST %s: sign-in of fresh identity %s", u.verifyPath(), id.name)
	if cut != "" {
		w += " (cut short: " + clip.Text(u.mask(cut), 100) + ")"
	}
	u.written = append(u.written, w)
}

// verifyPath names the sign-in's verify URL for a person.
func (u *authzUndo) verifyPath() string {
	if u.verify == "" {
		return "the sign-in's verify URL"
	}
	return pathOnly(u.verify)
}

// sent notes a write sent (or cut short by err after it was let through:
// it may have reached the platform).
func (u *authzUndo) sent(method, target, as string, fields []string, err error) {
	w := fmt.Sprintf("%s %s as %s", method, pathOnly(target), as)
	if len(fields) > 0 {
		w += " (fields " + strings.Join(fields, ", ") + ")"
	}
	if err != nil {
		w += " (cut short: " + clip.Text(u.mask(err.Error()), 100) + ")"
	}
	u.written = append(u.written, w)
}

// mask writes {address} for each fresh identity's address in s.
func (u *authzUndo) mask(s string) string {
	for _, a := range u.addrs {
		s = regexp.MustCompile("(?i)"+regexp.QuoteMeta(a)).ReplaceAllLiteralString(s, "{address}")
	}
	return s
}

// write sends body (a JSON object) to target with method as identity as,
// after prior (the resource as as read it just before; nil for a POST),
// and keeps its undo. ok is false, with nothing sent, when the budget
// cannot hold the write and its undo, or a PUT or PATCH has no prior
// JSON object to restore.
func (u *authzUndo) write(ctx context.Context, target, method, body, as string, prior map[string]json.RawMessage) (res fleet.Result, ok bool, err error) {
	var sent map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &sent) != nil {
		return nil, false, nil
	}
	if method != http.MethodPost && prior == nil || !u.room(2) {
		return nil, false, nil
	}
	fields := slices.Sorted(maps.Keys(sent))
	went := u.spent()
	res, err = u.t.submit(ctx, submitArgs{URL: target, Method: method, Enctype: "json", JSON: body, As: as})
	if !went() {
		return res, res != nil, err // refused before it was sent: nothing to undo
	}
	u.sent(method, target, as, fields, err)
	switch {
	case method != http.MethodPost:
		// Even cut short it may have reached the platform: restore
		// compares what is there with prior before it writes anything.
		u.pending = append(u.pending, authzWrite{url: target, method: method, as: as, prior: prior, fields: fields})
	case err != nil || statusOf(res) == 0:
		u.leave("what the POST to %s stored, if anything (its answer was cut short: %s)", pathOnly(target), u.words(res, err))
	case res["created"] != nil && res["created"] != "":
		u.pending = append(u.pending, authzWrite{url: target, method: method, as: as, created: fmt.Sprint(res["created"])})
	case is2xx(res):
		u.leave("what the POST to %s stored, if anything (its answer names nothing to DELETE)", pathOnly(target))
	}
	return res, res != nil, err
}

// spent returns a func that reports whether a write was let through
// (the run's meter spent one: qa_submit and qa_login spend it just before
// they send) since spent was called.
func (u *authzUndo) spent() func() bool {
	before := u.t.run.Meter.Used(fleet.ResWrites)
	return func() bool { return u.t.run.Meter.Used(fleet.ResWrites) > before }
}

// post sends a POST that is not meant to store anything (a sign-out) and
// learns what its answer names as created, as write does.
func (u *authzUndo) post(ctx context.Context, target, as string) (fleet.Result, error) {
	went := u.spent()
	res, err := u.t.submit(ctx, submitArgs{URL: target, Method: http.MethodPost, Enctype: "json", JSON: "{}", As: as})
	if went() {
		u.sent(http.MethodPost, target, as, nil, err)
	}
	if c, _ := res["created"].(string); err == nil && c != "" {
		u.pending = append(u.pending, authzWrite{url: target, method: http.MethodPost, as: as, created: c})
	}
	return res, err
}

func (u *authzUndo) leave(format string, args ...any) {
	if s := fmt.Sprintf(format, args...); !slices.Contains(u.left, s) {
		u.left = append(u.left, s)
	}
}

// finish undoes the pending writes, newest first, and lists the
// sign-ins. An error (the run's end: cancelled, the budget) stops it; what
// it did not undo is then listed as left.
func (u *authzUndo) finish(ctx context.Context) error {
	var first error
	for i := len(u.pending) - 1; i >= 0; i-- {
		w := u.pending[i]
		if first != nil {
			u.leaveWrite(w, "the call ended first: "+first.Error())
			continue
		}
		var err error
		if w.created != "" {
			err = u.remove(ctx, w)
		} else {
			err = u.restore(ctx, w)
		}
		if err != nil {
			first = err
			u.leaveWrite(w, u.words(nil, err))
		}
	}
	u.pending = nil
	if len(u.signIns) > 0 {
		u.leave("the accounts of fresh identities %s, if the sign-in at %s made one (qa_authz removes none)", strings.Join(u.signIns, ", "), u.verifyPath())
	}
	return first
}

// leaveWrite lists w as left, with why.
func (u *authzUndo) leaveWrite(w authzWrite, why string) {
	if w.created != "" {
		u.leave("%s, which qa_authz's POST to %s as %s created (DELETE: %s)", pathOnly(w.created), pathOnly(w.url), w.as, why)
		return
	}
	u.leave("the fields %s of %s (fresh identity %s's own resource) hold what qa_authz's %s wrote (restoring them: %s)", strings.Join(w.fields, ", "), pathOnly(w.url), w.as, w.method, why)
}

// remove DELETEs what a POST created, as the identity that created it.
func (u *authzUndo) remove(ctx context.Context, w authzWrite) error {
	r, err := u.t.submit(ctx, submitArgs{URL: w.created, Method: http.MethodDelete, As: w.as})
	if err != nil {
		return err
	}
	if st := statusOf(r); st >= 200 && st <= 299 || st == http.StatusNotFound || st == http.StatusGone {
		u.undone = append(u.undone, fmt.Sprintf("DELETE %s (created by the POST to %s)", pathOnly(w.created), pathOnly(w.url)))
		return nil
	}
	u.leaveWrite(w, u.words(r, nil))
	return nil
}

// restore writes back the fields w changed, as their owner, and reads
// them again to be sure.
func (u *authzUndo) restore(ctx context.Context, w authzWrite) error {
	now, err := u.t.authzGet(ctx, w.url, w.as)
	if err != nil {
		return err
	}
	changed := changedFields(w.prior, jsonTop(now), w.fields)
	if is2xx(now) && len(changed) == 0 {
		return nil // the write changed nothing
	}
	var back map[string]json.RawMessage
	if w.method == http.MethodPut {
		back = w.prior
	} else {
		back = map[string]json.RawMessage{}
		for _, f := range changed {
			v, ok := w.prior[f]
			if !ok {
				w.fields = []string{f}
				u.leaveWrite(w, "the field had no value before")
				return nil
			}
			back[f] = v
		}
	}
	body, _ := json.Marshal(back)
	r, err := u.t.submit(ctx, submitArgs{URL: w.url, Method: w.method, Enctype: "json", JSON: string(body), As: w.as})
	if err != nil {
		return err
	}
	again, err := u.t.authzGet(ctx, w.url, w.as)
	if err != nil {
		return err
	}
	if !is2xx(r) || !is2xx(again) || len(changedFields(w.prior, jsonTop(again), w.fields)) > 0 {
		w.fields = changed
		u.leaveWrite(w, fmt.Sprintf("%s answered %s and reading it back shows other values", w.method, u.words(r, nil)))
		return nil
	}
	u.undone = append(u.undone, fmt.Sprintf("restored %s of %s with %s as %s", strings.Join(changed, ", "), pathOnly(w.url), w.method, w.as))
	return nil
}

// changedFields are the fields whose value in now differs from prior's
// (compared as compact JSON); all of fields when now is not a JSON object.
func changedFields(prior, now map[string]json.RawMessage, fields []string) []string {
	var out []string
	for _, f := range fields {
		if now == nil || !sameJSON(prior[f], now[f]) {
			out = append(out, f)
		}
	}
	return out
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// words is err's text, else an answer's status, else its error, with
// the fresh identities' addresses masked before it is cut to length.
func (u *authzUndo) words(r fleet.Result, err error) string {
	switch {
	case err != nil:
		return clip.Text(u.mask(err.Error()), 100)
	case statusOf(r) != 0:
		return fmt.Sprintf("HTTP %d", statusOf(r))
	case r == nil:
		return "no answer"
	}
	return clip.Text(u.mask(r.Err()), 100)
}

// into adds what the call wrote, undid and left to its result, and
// masks the fresh identities' addresses in its error.
func (u *authzUndo) into(res fleet.Result) {
	masked := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = u.mask(s)
		}
		return out
	}
	if len(u.written) > 0 {
		res["written"] = masked(u.written)
	}
	if len(u.undone) > 0 {
		res["undone"] = masked(u.undone)
	}
	if e, ok := res["error"].(string); ok {
		res["error"] = u.mask(e)
	}
	if len(u.left) > 0 {
		res["left_on_platform"] = masked(u.left)
	}
}
