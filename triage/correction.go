package triage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/qafleet/fleetd/fleet"
)

// Correction is an operator's (or the fix stage's) record about an earlier
// finding. On the log it is a qa/v1 envelope whose ref= names the corrected
// entry by its index, and, for duplicate-of, whose of= names an entry of the
// cluster it duplicates:
//
//	qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=duplicate-of ref=12 of=7
//	qa/v1 source=qa-fixer sev=info surface=compiler kind=needs-repro ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=unmerge ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=unmerge ref=5c1e0a9d2b3f4a10
//	qa/v1 source=qa-operator sev=info surface=fleet kind=accepted-risk ref=12 until=2027-01-31T00:00:00Z
//	only reachable from the admin network; revisit when it goes public
//
// ref= may also be a cluster id (the fingerprint of the cluster's first
// finding, 16 hex digits), as the fix stage writes it:
//
//	qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=5c1e0a9d2b3f4a10
//
// A correction applies to the whole cluster holding entry ref at the time
// the correction is read, and only when its sender is trusted; sev, surface
// and source are ignored by triage (they are required by qa/v1). An
// unmerge is the exception: ref=INDEX splits that one entry out of its
// cluster, ref=ID takes that cluster (a place) out of the folded row it is
// shown in. An accepted-risk needs a reason (the summary) and may carry an
// expiry (until=, RFC 3339), after which the cluster is open again.
type Correction struct {
	Kind    fleet.Kind    // a correction kind (IsCorrection)
	Ref     uint64        // the corrected entry, when Cluster is ""
	Cluster string        // the corrected cluster's id, instead of an entry
	Of      uint64        // for KindDuplicateOf: an entry of the cluster Ref duplicates
	Until   time.Time     // for KindAcceptedRisk: when the acceptance ends (zero: never)
	Source  string        // "" means "qa-operator"
	Surface fleet.Surface // "" means "fleet"
	Note    string        // free text, why: required for KindAcceptedRisk
}

// Header keys of correction records.
const (
	keyOf    = "of"    // duplicate-of: an entry of the cluster it duplicates
	keyUntil = "until" // accepted-risk: the expiry
)

// IsCorrection reports whether k is a kind of correction record.
func IsCorrection(k fleet.Kind) bool {
	switch k {
	case fleet.KindResolution, fleet.KindFalsePositive, fleet.KindDuplicateOf, fleet.KindNeedsRepro,
		fleet.KindUnmerge, fleet.KindAcceptedRisk:
		return true
	}
	return false
}

// ErrBadMark is wrapped by ParseMark for an argument it does not understand.
var ErrBadMark = errors.New("want false-positive, resolved, duplicate-of=J, unmerge or accepted-risk")

// ErrBadCorrection is wrapped by ParseCorrection for a correction record
// triage cannot apply.
var ErrBadCorrection = errors.New("bad correction record")

// ParseMark parses the arguments of `fleetd findings mark REF WHAT`, where
// WHAT is false-positive, resolved (or resolution), duplicate-of=J, unmerge
// or accepted-risk and REF an entry index, or, for unmerge, the id of a
// cluster shown as a place of a folded row. The caller adds Note and Until;
// Validate checks the whole.
func ParseMark(ref, what string) (Correction, error) {
	var c Correction
	if isClusterID(ref) && what == "unmerge" {
		c.Cluster = ref
	} else {
		i, err := parseIndex(ref)
		if err != nil {
			if isClusterID(ref) {
				return Correction{}, fmt.Errorf("mark: %q: only unmerge takes a cluster id; name an entry of the cluster", ref)
			}
			return Correction{}, fmt.Errorf("mark: index %q: %w", ref, err)
		}
		c.Ref = i
	}
	switch {
	case what == "false-positive":
		c.Kind = fleet.KindFalsePositive
	case what == "resolved" || what == "resolution":
		c.Kind = fleet.KindResolution
	case what == "unmerge":
		c.Kind = fleet.KindUnmerge
	case what == "accepted-risk":
		c.Kind = fleet.KindAcceptedRisk
	case strings.HasPrefix(what, "duplicate-of="):
		of, err := parseIndex(strings.TrimPrefix(what, "duplicate-of="))
		if err != nil {
			return Correction{}, fmt.Errorf("mark: %q: %w", what, err)
		}
		if of == c.Ref {
			return Correction{}, fmt.Errorf("mark: entry %d cannot duplicate itself", c.Ref)
		}
		c.Kind, c.Of = fleet.KindDuplicateOf, of
	default:
		return Correction{}, fmt.Errorf("mark: %q: %w", what, ErrBadMark)
	}
	return c, nil
}

// parseIndex accepts decimal digits only: no sign, space or prefix.
func parseIndex(s string) (uint64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not an entry index")
	}
	return strconv.ParseUint(s, 10, 64)
}

// RefString is the ref= value c names: the cluster id, or the entry index.
func (c Correction) RefString() string {
	if c.Cluster != "" {
		return c.Cluster
	}
	return strconv.FormatUint(c.Ref, 10)
}

// Validate reports what makes c a correction triage would not apply: a
// kind that is not a correction, a cluster id that is not one (or on a
// kind other than unmerge or a fix-stage resolution or needs-repro), an
// entry duplicating itself, an accepted risk without a reason, a reason
// too long for the log, an expiry on anything but an accepted risk.
func (c Correction) Validate() error {
	if !IsCorrection(c.Kind) {
		return fmt.Errorf("kind %q is not a correction", c.Kind)
	}
	if c.Cluster != "" && !isClusterID(c.Cluster) {
		return fmt.Errorf("cluster %q is not a cluster id (16 lowercase hex digits)", c.Cluster)
	}
	switch c.Kind {
	case fleet.KindDuplicateOf:
		if c.Cluster != "" {
			return errors.New("duplicate-of names an entry, not a cluster id")
		}
		if c.Of == c.Ref {
			return fmt.Errorf("entry %d cannot duplicate itself", c.Ref)
		}
	case fleet.KindAcceptedRisk:
		if strings.TrimSpace(c.Note) == "" {
			return errors.New("accepted-risk needs a reason")
		}
	}
	if !c.Until.IsZero() && c.Kind != fleet.KindAcceptedRisk {
		return fmt.Errorf("an expiry (until) is only for accepted-risk, not %s", c.Kind)
	}
	if len(c.Note) > maxNote {
		return fmt.Errorf("reason is %d bytes, at most %d", len(c.Note), maxNote)
	}
	return nil
}

// maxNote bounds a correction's reason, well inside an entry's 2048 bytes.
const maxNote = 1024

// Format returns the correction as qa/v1 text ready to post; the error is
// Validate's, or fleet.Format's.
func (c Correction) Format() (string, error) {
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("correction: %w", err)
	}
	f := fleet.Finding{
		Source: c.Source, Severity: fleet.SeverityInfo, Surface: c.Surface, Kind: c.Kind,
		Ref: c.RefString(), Summary: c.Note,
	}
	if f.Source == "" {
		f.Source = "qa-operator"
	}
	if f.Surface == "" {
		f.Surface = fleet.SurfaceFleet
	}
	switch {
	case c.Kind == fleet.KindDuplicateOf:
		f.Extra = []fleet.Field{{Key: keyOf, Value: strconv.FormatUint(c.Of, 10)}}
	case !c.Until.IsZero():
		f.Extra = []fleet.Field{{Key: keyUntil, Value: c.Until.UTC().Format(time.RFC3339)}}
	}
	text, err := fleet.Format(f)
	if err != nil {
		return "", fmt.Errorf("correction: %w", err)
	}
	return text, nil
}

// ParseCorrection reads a correction record from a parsed qa/v1 entry: the
// parser of correction records on the log, which anyone may write. ref= is
// an entry index or a cluster id (16 lowercase hex digits), of= (for
// duplicate-of) an entry index or a cluster id, until= (accepted-risk only)
// an RFC 3339 time; the summary is the note. The error wraps
// ErrBadCorrection and names what was wrong.
func ParseCorrection(f *fleet.Finding) (Correction, error) {
	bad := func(format string, args ...any) (Correction, error) {
		return Correction{}, fmt.Errorf("%w: %s", ErrBadCorrection, fmt.Sprintf(format, args...))
	}
	if f.FreeForm || !IsCorrection(f.Kind) {
		return bad("kind %q is not a correction", f.Kind)
	}
	c := Correction{Kind: f.Kind, Source: f.Source, Surface: f.Surface, Note: f.Summary}
	switch {
	case f.Ref == "":
		return bad("%s without ref=", f.Kind)
	case isClusterID(f.Ref):
		c.Cluster = f.Ref
	default:
		i, err := parseIndex(f.Ref)
		if err != nil {
			return bad("ref=%.40q is neither an entry index nor a cluster id", f.Ref)
		}
		c.Ref = i
	}
	var of, until string
	for _, x := range f.Extra {
		switch x.Key {
		case keyOf:
			of = x.Value
		case keyUntil:
			until = x.Value
		}
	}
	switch f.Kind {
	case fleet.KindDuplicateOf:
		if of == "" {
			return bad("duplicate-of without of=")
		}
		if !isClusterID(of) {
			i, err := parseIndex(of)
			if err != nil {
				return bad("of=%.40q is neither an entry index nor a cluster id", of)
			}
			c.Of = i
		}
	case fleet.KindAcceptedRisk:
		if strings.TrimSpace(f.Summary) == "" {
			return bad("accepted-risk without a reason")
		}
		if until != "" {
			t, err := time.Parse(time.RFC3339, until)
			if err != nil {
				return bad("until=%.40q is not an RFC 3339 time", until)
			}
			c.Until = t.UTC()
		}
	}
	if until != "" && f.Kind != fleet.KindAcceptedRisk {
		return bad("until= on %s: only accepted-risk expires", f.Kind)
	}
	return c, nil
}

// correct applies a correction record read at en. Every decision depends
// on the log alone (what entries are findings, what came before), never on
// how they were clustered, so that the splits an unmerge asks for are a
// function of the log (see Engine.splits).
func (e *Engine) correct(en *Entry, f *fleet.Finding, trusted bool) {
	e.totals.Corrections++
	if !trusted {
		e.totals.CorrectionsIgnored++
		return
	}
	rec, err := ParseCorrection(f)
	if err != nil {
		e.totals.CorrectionsInvalid++
		return
	}
	if f.Kind == fleet.KindUnmerge {
		if e.unmerge(en, rec) {
			e.totals.CorrectionsApplied++
		} else {
			e.totals.CorrectionsInvalid++
		}
		return
	}
	c, ok := e.refCluster(f.Ref, en.Index)
	if !ok {
		e.totals.CorrectionsInvalid++
		return
	}
	note := fleet.CorrectionNote{Entry: en.Index, Kind: f.Kind, Time: en.Time.UTC(), Ref: strings.Clone(f.Ref), Reason: clipNote(rec.Note)}
	switch f.Kind {
	case fleet.KindResolution, fleet.KindFalsePositive, fleet.KindAcceptedRisk:
		cl := &e.clusters[c]
		cl.corr = corr{kind: f.Kind, index: en.Index, until: rec.Until, reason: note.Reason}
		cl.reopen = reopen{}
		if !rec.Until.IsZero() {
			u := rec.Until
			note.Until = &u
		}
		if f.Kind == fleet.KindFalsePositive && cl.rep.repro != nil {
			// A new crash state with this repro is a reason to look again
			// (newGroup): remember the repro's key.
			if e.fpRepro == nil {
				e.fpRepro = map[litKey]int32{}
			}
			e.fpRepro[e.reproKey(cl.surface, cl.rep.repro)] = c
		}
	case fleet.KindNeedsRepro:
		e.clusters[c].needsRepro = true
	case fleet.KindDuplicateOf:
		of := ""
		for _, x := range f.Extra {
			if x.Key == keyOf {
				of = x.Value
			}
		}
		target, ok := e.refCluster(of, en.Index)
		if !ok {
			e.totals.CorrectionsInvalid++
			return
		}
		note.Of = e.clusters[target].id
		if s := e.clusters[c].split; s > en.Index && target != c {
			// An unmerge after this record split the cluster out: it
			// supersedes the duplicate-of.
			note.Reason = "superseded by the unmerge at entry " + strconv.FormatUint(s, 10)
			e.addNote(c, note)
			e.totals.CorrectionsApplied++
			return
		}
		if target != c {
			e.addNote(c, note) // merge carries it over
			e.merge(c, target)
			e.totals.CorrectionsApplied++
			return
		}
	}
	e.addNote(c, note)
	e.totals.CorrectionsApplied++
}

// unmerge applies an unmerge record read at en; false when it names no
// earlier finding or cluster, or one already split.
//
// ref=ID takes the cluster with that id (a place) out of the folded row
// it is shown in, from now on: a report-time decision (foldPlaces), which
// changes no clustering.
//
// ref=INDEX splits entry INDEX out of its cluster: the entry starts a
// cluster of its own (its id the entry's fingerprint, or one derived from
// it when that is taken), later reports of the same text follow it, it is
// never bridged back, never folded, and a duplicate-of older than the
// unmerge does not merge it. Since clusters keep running aggregates that
// cannot give a finding back, the split is applied when the entry arrives:
// the engine learns it here, marks itself stale, and its owner rebuilds it
// from the log with the split known (BuildEngine, Triage). Whether entry
// INDEX may be split depends only on the log (an earlier finding, not split
// by an earlier unmerge), so every build finds the same splits.
func (e *Engine) unmerge(en *Entry, corr Correction) bool {
	note := fleet.CorrectionNote{Entry: en.Index, Kind: fleet.KindUnmerge, Time: en.Time.UTC(), Ref: strings.Clone(corr.RefString()), Reason: clipNote(corr.Note)}
	if corr.Cluster != "" {
		c, ok := e.byID[corr.Cluster]
		if !ok || e.find(c) != c {
			return false // no such cluster, or one merged into another: no row of its own to take out
		}
		cl := &e.clusters[c]
		if cl.unfold != 0 || cl.split != 0 {
			return false // already its own row
		}
		cl.unfold = en.Index
		e.addNote(c, note)
		return true
	}
	n := corr.Ref
	if n >= en.Index || !e.started || n < e.base || e.of[n-e.base] < 0 {
		return false // not an earlier finding
	}
	if r, ok := e.splits[n]; ok {
		if r != en.Index {
			return false // split by an earlier unmerge
		}
		// Applied when entry n arrived (splitOut).
		s := e.find(e.of[n-e.base])
		if from, ok := e.splitFrom[n]; ok {
			from = e.find(from)
			note.Of = e.clusters[from].id
			e.addNote(from, note)
		}
		e.addNote(s, note)
		return true
	}
	if e.splits == nil {
		e.splits = map[uint64]uint64{}
	}
	e.splits[n] = en.Index
	e.stale = true
	return true
}

// splitOut places entry en, which an unmerge at record r splits out, in
// a cluster of its own: c is the cluster assign gave it, created whether
// assign made c for it. Earlier corrections naming the entry still mean
// c (refCluster).
func (e *Engine) splitOut(c int32, created bool, en *Entry, f *fleet.Finding, trusted bool, r uint64) int32 {
	if created {
		e.clusters[c].split = r // alone already
		return c
	}
	s := e.newCluster(f)
	if id := e.clusters[s].id; e.byID[id] != s {
		// Its fingerprint names another cluster (the same text was
		// reported first elsewhere): derive one of its own.
		sum := sha256.Sum256([]byte(id + ":split:" + strconv.FormatUint(en.Index, 10)))
		id = hex.EncodeToString(sum[:8])
		e.clusters[s].id = id
		if _, taken := e.byID[id]; !taken {
			e.byID[id] = s
		}
	}
	cl := &e.clusters[s]
	cl.split = r
	cl.anchored = f.Repro != nil || f.State() != ""
	// Later reports written the same way follow the split entry.
	h := e.writtenHash(f)
	i, _ := e.written.find(h)
	e.written.set(i, h, s, trusted)
	key, _ := e.literalKey(f)
	if trusted {
		e.keys[key] = s
	} else {
		e.ukeys[key] = s
	}
	if e.splitFrom == nil {
		e.splitFrom = map[uint64]int32{}
	}
	e.splitFrom[en.Index] = c
	return s
}

// addNote adds a correction to cluster c's history, keeping the latest
// maxNotes.
//
// Notes are never changed once appended (reports share them: row), so
// the trim copies.
func (e *Engine) addNote(c int32, n fleet.CorrectionNote) {
	cl := &e.clusters[c]
	cl.notes = append(cl.notes, n)
	if len(cl.notes) > maxNotes {
		cl.notes = slices.Clone(cl.notes[len(cl.notes)-maxNotes:])
	}
}

// maxNotes bounds a cluster's correction history.
const maxNotes = 32

// clipNote bounds a note kept in memory and copies it off the entry text.
func clipNote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxNote {
		n := maxNote
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.Clone(s)
}

// Stale reports whether an unmerge read since the engine was built names
// an entry added before it: the engine no longer matches the log, and its
// owner must build a new one with Splits (BuildEngine does).
func (e *Engine) Stale() bool { return e.stale }

// Splits returns the entry splits the engine knows: entry index -> the
// unmerge record that splits it out. A new engine given them (Presplit)
// applies each split when its entry arrives.
func (e *Engine) Splits() map[uint64]uint64 { return maps.Clone(e.splits) }

// Presplit tells an empty engine the splits an earlier build of the same
// log found (Splits). It panics when entries were added already.
func (e *Engine) Presplit(splits map[uint64]uint64) {
	if e.started {
		panic("triage: Presplit after Add")
	}
	if len(splits) > 0 {
		e.splits = maps.Clone(splits)
	}
}

// BuildEngine builds an engine over a whole log: load calls add with the
// log's entries in order. When an unmerge in the log splits an entry read
// before it, the log is read again with the splits known, so the result
// is the same whatever the pages: twice at most, since the first pass
// finds every split (whether an unmerge splits depends on the log alone),
// and once for a log without such an unmerge.
func BuildEngine(cfg Config, load func(add func([]Entry) error) error) (*Engine, error) {
	return buildEngine(cfg, load, nil)
}

// buildEngine is BuildEngine starting from splits already known to hold
// for the log load reads.
func buildEngine(cfg Config, load func(add func([]Entry) error) error, splits map[uint64]uint64) (*Engine, error) {
	for {
		e, err := NewEngine(cfg)
		if err != nil {
			return nil, err
		}
		e.Presplit(splits)
		if err := load(e.Add); err != nil {
			return nil, err
		}
		if !e.stale {
			return e, nil
		}
		splits = e.splits
	}
}

// refCluster resolves a ref= value to the cluster of an earlier finding:
// an entry index, or a cluster id (refByID).
func (e *Engine) refCluster(ref string, at uint64) (int32, bool) {
	if isClusterID(ref) {
		return e.refByID(ref)
	}
	i, err := parseIndex(ref)
	if err != nil || i >= at {
		return 0, false
	}
	if r, ok := e.splits[i]; ok && at < r {
		// Written before the unmerge of entry i: it meant the cluster the
		// entry was in then.
		if c, ok := e.splitFrom[i]; ok {
			return e.find(c), true
		}
	}
	return e.clusterAt(i)
}

// isClusterID reports whether ref has the shape of a cluster id, a
// fleet.Fingerprint: 16 lowercase hex digits. An entry index that long
// (10^15 and up) cannot occur, so the two never collide.
func isClusterID(ref string) bool {
	if len(ref) != 16 {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// refByID resolves a cluster id, as the fix stage writes it (kind=resolution
// ref=<fp>, kind=needs-repro ref=<fp>), to that cluster after duplicate-of
// merges. Only clusters created by entries before the correction exist
// when it is read, so a ref can never name a later finding.
func (e *Engine) refByID(id string) (int32, bool) {
	c, ok := e.byID[id]
	if !ok {
		return 0, false
	}
	return e.find(c), true
}

// Errors CheckCorrection wraps: what is wrong with the correction asked
// for, against the log as the engine holds it.
var (
	ErrNoSuchRef    = errors.New("no such finding")
	ErrAlreadySplit = errors.New("already split")
	ErrNotMerged    = errors.New("nothing to split")
)

// CheckCorrection checks a correction an operator asks for against the
// log the engine holds, before it is posted: the entries it names must be
// findings (not corrections or meta records, not past the end), and an
// unmerge must name an entry that shares its cluster with others and is
// not its first finding, or the id of a cluster shown as a place of a
// folded row, and not one split already. The error wraps ErrNoSuchRef,
// ErrAlreadySplit or ErrNotMerged and says what was wrong; Validate's
// errors come first.
func (e *Engine) CheckCorrection(c Correction) error {
	if err := c.Validate(); err != nil {
		return err
	}
	finding := func(what string, i uint64) (int32, error) {
		if !e.started || i >= e.next || i < e.base {
			return 0, fmt.Errorf("%s %d: %w (the log has %d entries)", what, i, ErrNoSuchRef, e.next)
		}
		if e.of[i-e.base] < 0 {
			return 0, fmt.Errorf("%s %d is a correction or meta record: %w", what, i, ErrNoSuchRef)
		}
		return e.find(e.of[i-e.base]), nil
	}
	if c.Cluster != "" {
		ci, ok := e.byID[c.Cluster]
		if !ok {
			return fmt.Errorf("cluster %s: %w", c.Cluster, ErrNoSuchRef)
		}
		if c.Kind != fleet.KindUnmerge {
			return nil
		}
		cl := &e.clusters[ci]
		switch {
		case cl.unfold != 0:
			return fmt.Errorf("cluster %s was taken out of its row by entry %d: %w", c.Cluster, cl.unfold, ErrAlreadySplit)
		case cl.split != 0:
			return fmt.Errorf("cluster %s was split out by entry %d and is never folded: %w", c.Cluster, cl.split, ErrAlreadySplit)
		case e.find(ci) != ci:
			return fmt.Errorf("cluster %s was merged into %s: unmerge one of its entries instead: %w", c.Cluster, e.clusters[e.find(ci)].id, ErrNotMerged)
		}
		if e.isPlace(c.Cluster) {
			return nil
		}
		return fmt.Errorf("cluster %s is not a place of a folded row: %w", c.Cluster, ErrNotMerged)
	}
	ci, err := finding("entry", c.Ref)
	if err != nil {
		return err
	}
	switch c.Kind {
	case fleet.KindDuplicateOf:
		if _, err := finding("entry", c.Of); err != nil {
			return err
		}
	case fleet.KindUnmerge:
		if r, ok := e.splits[c.Ref]; ok {
			return fmt.Errorf("entry %d was split out of its cluster by entry %d: %w", c.Ref, r, ErrAlreadySplit)
		}
		cl := &e.clusters[ci]
		raw := e.of[c.Ref-e.base]
		hint := ""
		if e.isPlace(cl.id) {
			hint = fmt.Sprintf("; to take its place out of the folded row, unmerge cluster %s", cl.id)
		}
		if cl.counted[0].n+cl.counted[1].n < 2 {
			return fmt.Errorf("entry %d is alone in cluster %s%s: %w", c.Ref, cl.id, hint, ErrNotMerged)
		}
		if raw == ci && firstEntry(cl) == c.Ref {
			return fmt.Errorf("entry %d is the first finding of cluster %s (the others joined it): unmerge those, or mark the cluster%s: %w", c.Ref, cl.id, hint, ErrNotMerged)
		}
	}
	return nil
}

// firstEntry is the lowest entry index a cluster counts.
func firstEntry(cl *cluster) uint64 {
	first := uint64(math.MaxUint64)
	for k := range cl.counted {
		if cl.counted[k].n > 0 {
			first = min(first, cl.counted[k].first)
		}
	}
	return first
}

// isPlace reports whether cluster id is listed among a folded row's
// places (a whole report: for CheckCorrection, not for a hot path).
func (e *Engine) isPlace(id string) bool {
	for _, row := range e.Report(time.Time{}).Clusters {
		for _, p := range row.Places {
			if p.Cluster == id {
				return true
			}
		}
	}
	return false
}

// applyCause applies a kind=cause record read at en: the fix stage's
// bisection of the cluster its ref= names (a cluster id or an earlier
// finding's entry). Only a trusted sender's counts; a record triage
// cannot read, or whose ref= names no earlier finding, is counted invalid
// and changes nothing. Read in log order, the latest valid record of a
// cluster wins, so every build of the same log agrees.
func (e *Engine) applyCause(en *Entry, f *fleet.Finding, trusted bool) {
	e.totals.Causes++
	if !trusted {
		e.totals.CausesIgnored++
		return
	}
	c, err := fleet.ParseCause(f)
	if err != nil {
		e.totals.CausesInvalid++
		return
	}
	ci, ok := e.refCluster(f.Ref, en.Index)
	if !ok {
		e.totals.CausesInvalid++
		return
	}
	c.Entry = en.Index
	c.Commit, c.Since, c.Subject = strings.Clone(c.Commit), strings.Clone(c.Since), strings.Clone(c.Subject)
	e.clusters[ci].cause = &c
}
