package triage

import (
	"bytes"
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// placeKeys are the repro arguments that say where a check looked: the
// name a call went to, the name a page belongs to, the URL fetched. The
// first one present is the place.
var placeKeys = []string{"target", "name", "url"}

// quoted matches a double-quoted word in a title.
var quoted = regexp.MustCompile(`"([^"\s]{1,64})"`)

// foldTitle bounds the part of a title a behaviour is read from: titles
// are cut at maxTitle bytes, and a longer place name moves the cut.
const foldTitle = 150

// behaviour returns what a row's check saw, without where: its surface,
// sources, repro tool and arguments other than the place, and its
// title with the place masked and measurements masked (maskMeasures);
// foldPlaces masks the other rows' places too and cuts the title
// (foldKey). ok is false for a row that names no place (or one too short
// to mask safely), an untrusted or free-form row, or a row without a
// repro: those are never folded.
func behaviour(row *fleet.Cluster) (key, place string, ok bool) {
	if !row.Trusted || row.FreeForm || row.Repro == nil {
		return "", "", false
	}
	core, place, ok := behaviourCore(row.Title, row.Repro)
	if !ok {
		return "", "", false
	}
	return behaviourKey(core, row), place, true
}

// behaviourKey adds to a row's core behaviour its surface and its sources
// (which may grow from one report to the next). Not its state: a
// correction on one place is a correction of the behaviour (foldState).
func behaviourKey(core string, row *fleet.Cluster) string {
	sources := row.Sources
	if len(sources) > 1 {
		sources = slices.Clone(sources)
		slices.Sort(sources)
	}
	return string(row.Surface) + "\x01" + core + "\x01" + strings.Join(sources, ",")
}

// behaviourCore is the part of behaviour fixed by a cluster's title and
// repro, which change rarely: Engine.Report keeps it per cluster.
func behaviourCore(title string, repro *fleet.Repro) (core, place string, ok bool) {
	if !placeKeyIn(repro.Args) {
		return "", "", false // most repros: no allocation
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(repro.Args, &args) != nil {
		return "", "", false
	}
	for _, k := range placeKeys {
		raw, has := args[k]
		if !has {
			continue
		}
		if json.Unmarshal(raw, &place) != nil || len(place) < 3 {
			return "", "", false
		}
		delete(args, k)
		break
	}
	if place == "" || !strings.Contains(title, place) {
		return "", "", false // a title that does not name its place may describe anything
	}
	rest, err := json.Marshal(args) // map keys sorted: canonical
	if err != nil {
		return "", "", false
	}
	t := strings.ReplaceAll(title, place, "\x00")
	// A name quoted beside the URL it lives at ("bob" and .../bob/) is the
	// place too.
	for _, m := range quoted.FindAllStringSubmatch(t, 8) {
		if len(m[1]) >= 3 && strings.Contains(place, m[1]) {
			t = strings.ReplaceAll(t, m[0], "\x00")
		}
	}
	t = maskMeasures(strings.ToLower(t))
	// Cut at foldTitle by foldKey, once other places are masked too.
	return strings.ToLower(repro.Tool) + "\x01" + string(rest) + "\x01" + t, place, true
}

// placeKeyIn reports whether args may hold a place argument: a quick
// look for the quoted key before any decoding.
func placeKeyIn(args []byte) bool {
	for _, k := range placeKeys {
		if bytes.Contains(args, []byte(`"`+k+`"`)) {
			return true
		}
	}
	return false
}

// foldMemo is a cluster's behaviourCore, kept while its title and repro
// stay the ones it was computed from.
type foldMemo struct {
	title       string
	repro       *fleet.Repro
	core, place string
	ok          bool
}

// behaviourOf is behaviour for the row of cluster c, its core computed
// once per title and repro.
func (e *Engine) behaviourOf(c int32, row *fleet.Cluster) (key, place string, ok bool) {
	if !row.Trusted || row.FreeForm || row.Repro == nil {
		return "", "", false
	}
	if cl := &e.clusters[c]; cl.split != 0 || cl.unfold != 0 {
		return "", "", false // unmerged: a row of its own
	}
	if int(c) >= len(e.foldMemo) {
		e.foldMemo = slices.Grow(e.foldMemo, len(e.clusters)-len(e.foldMemo))[:len(e.clusters)]
	}
	m := &e.foldMemo[c]
	if m.repro != row.Repro || m.title != row.Title {
		m.title, m.repro = row.Title, row.Repro
		m.core, m.place, m.ok = behaviourCore(row.Title, row.Repro)
	}
	if !m.ok {
		return "", "", false
	}
	return behaviourKey(m.core, row), m.place, true
}

// maskMeasures replaces the literals of a lowercased title by '#': a
// number (a latency, a size, a count) unless it follows "http ", "status "
// or "exit " (a status is the behaviour, a latency only a measurement),
// and a hex literal (0x…, or 4+ hex digits with a digit: a token, a hash,
// a secret). Other words with digits (p95, v2, sha256) are kept.
func maskMeasures(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	last := 0 // s[last:] is not yet copied
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		ws, we := i, i+1
		for ws > last && wordByte[s[ws-1]] {
			ws--
		}
		for we < len(s) && wordByte[s[we]] {
			we++
		}
		b.WriteString(s[last:ws])
		w, head := s[ws:we], s[:ws]
		whole, _ := literalWord(w)
		allDigits := strings.Trim(w, "0123456789") == ""
		switch {
		case allDigits && (strings.HasSuffix(head, "http ") || strings.HasSuffix(head, "status ") || strings.HasSuffix(head, "exit ")):
			b.WriteString(w)
		case whole:
			b.WriteByte('#')
		default:
			b.WriteString(w)
		}
		last, i = we, we-1
	}
	b.WriteString(s[last:])
	return b.String()
}

// foldPlaces folds rows that are one behaviour seen at several places
// (one check, the same reply or status shape, the same surface: behaviour,
// with every place any candidate row names masked wherever it appears in
// the arguments and titles, foldKey) into one row: the row of the place
// seen first, with every place listed (Places), counts summed, the
// highest severity and score, the union of sources and entries, the other
// places' cluster ids in Merged, the latest cause of any place, and the
// state the latest correction of any place gave (foldState). A place that
// behaves differently has another key and stays its own row. The engine's
// clusters are untouched (one per place: what ClusterOf and corrections
// address); only the report ranks the behaviour once, so the fix stage
// gets one work item for it.
//
// behaviourOf returns rows[i]'s behaviour (behaviour, or the Engine's memo
// of it).
func foldPlaces(rows []fleet.Cluster, first []uint64, behaviourOf func(i int) (key, place string, ok bool)) ([]fleet.Cluster, []uint64) {
	type candidate struct {
		i          int
		key, place string
	}
	var cands []candidate
	for i := range rows {
		if key, place, ok := behaviourOf(i); ok {
			cands = append(cands, candidate{i, key, place})
		}
	}
	if len(cands) < 2 {
		return rows, first
	}
	// Every place a candidate row names is masked in every candidate's
	// arguments and title, not only its own: a probe whose message names
	// another place of the platform (act for bob, asked of alice; act for
	// alice, asked of bob) is still one behaviour.
	places := map[string]struct{}{}
	for _, c := range cands {
		if isPlaceWord(c.place) {
			places[c.place] = struct{}{}
			places[strings.ToLower(c.place)] = struct{}{} // titles are compared lowercased
		}
	}
	groups := map[string][]foldMember{}
	var keys []string
	for _, c := range cands {
		key, place, i := foldKey(c.key, places), c.place, c.i
		if _, seen := groups[key]; !seen {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], foldMember{i, place})
	}
	drop := map[int]bool{}
	for _, key := range keys {
		ms := groups[key]
		places := map[string]bool{}
		for _, m := range ms {
			places[m.place] = true
		}
		if len(places) < 2 {
			continue // one place (its clusters differ otherwise): nothing to fold
		}
		slices.SortFunc(ms, func(a, b foldMember) int { return cmp.Compare(first[a.i], first[b.i]) })
		lead := &rows[ms[0].i]
		folded := *lead
		folded.Places = nil
		folded.Merged = slices.Clone(lead.Merged)
		var entries []uint64
		count := 0
		for _, m := range ms {
			r := &rows[m.i]
			folded.Places = append(folded.Places, fleet.Place{Place: m.place, Cluster: r.ID, Count: r.Count, LastSeen: r.LastSeen})
			count += r.Count
			entries = append(entries, r.Entries...)
			if m.i == ms[0].i {
				continue
			}
			drop[m.i] = true
			folded.Merged = append(folded.Merged, r.ID)
			folded.Merged = append(folded.Merged, r.Merged...)
			if r.Severity.Rank() > folded.Severity.Rank() {
				folded.Severity = r.Severity
			}
			folded.Score = max(folded.Score, r.Score)
			folded.Runs = max(folded.Runs, r.Runs)
			folded.Untrusted += r.Untrusted
			for _, s := range r.Sources {
				if !slices.Contains(folded.Sources, s) {
					folded.Sources = append(folded.Sources, s)
				}
			}
			if r.FirstSeen.Before(folded.FirstSeen) {
				folded.FirstSeen = r.FirstSeen
			}
			if r.LastSeen.After(folded.LastSeen) {
				folded.LastSeen = r.LastSeen
			}
			if r.Cause != nil && (folded.Cause == nil || r.Cause.Entry > folded.Cause.Entry) {
				folded.Cause = r.Cause // one behaviour, one cause: the latest bisection of any place
			}
		}
		slices.Sort(entries)
		entries = slices.Compact(entries)
		if len(entries) > maxFoldEntries {
			entries = append(entries[:1], entries[len(entries)-maxFoldEntries+1:]...)
		}
		folded.Count, folded.Entries, folded.EntriesOmitted = count, entries, count-len(entries)
		folded.State, folded.Correction, folded.StateReason = foldState(rows, ms)
		folded.Corrections = foldNotes(rows, ms)
		*lead = folded
	}
	if len(drop) == 0 {
		return rows, first
	}
	outRows, outFirst := rows[:0], first[:0]
	for i := range rows {
		if !drop[i] {
			outRows = append(outRows, rows[i])
			outFirst = append(outFirst, first[i])
		}
	}
	return outRows, outFirst
}

// foldKey finishes a behaviour key (surface, tool, arguments, title,
// sources, split by \x01; only the title may hold \x01 itself, and the
// sources follow the last one): every word of the arguments and the
// title that is one of places becomes \x00, as the row's own place
// already is, and then the title is cut at foldTitle bytes, since titles
// are cut at maxTitle and a longer place name moves the cut.
func foldKey(key string, places map[string]struct{}) string {
	i := strings.IndexByte(key, 1)
	j := i + 1 + strings.IndexByte(key[i+1:], 1)
	k := j + 1 + strings.IndexByte(key[j+1:], 1)
	l := strings.LastIndexByte(key, 1)
	if i < 0 || j <= i || k <= j || l <= k {
		return key // not a key behaviourKey made: leave it whole
	}
	rest, rm := maskPlaceWords(key[j+1:k], places)
	title, tm := maskPlaceWords(key[k+1:l], places)
	if len(title) > foldTitle {
		title = title[:foldTitle]
	} else if !rm && !tm {
		return key
	}
	return key[:j+1] + rest + "\x01" + title + key[l:]
}

// placeWordByte are the bytes of a word maskPlaceWords compares with the
// places: a name's (letters, digits, '-', '_').
var placeWordByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	return t
}()

// isPlaceWord reports whether a place is one word (a name, not a URL):
// only those are masked where other rows name them.
func isPlaceWord(p string) bool {
	if len(p) < 3 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if !placeWordByte[p[i]] {
			return false
		}
	}
	return true
}

// maskPlaceWords replaces every whole word of s that is one of places by
// \x00, and reports whether it replaced any (s is returned as is when
// not, without allocating).
func maskPlaceWords(s string, places map[string]struct{}) (string, bool) {
	var b strings.Builder
	last := 0 // s[last:] is not yet copied
	for i := 0; i < len(s); {
		if !placeWordByte[s[i]] {
			i++
			continue
		}
		j := i
		for j < len(s) && placeWordByte[s[j]] {
			j++
		}
		if _, ok := places[s[i:j]]; ok {
			if b.Len() == 0 && last == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[last:i])
			b.WriteByte(0)
			last = j
		}
		i = j
	}
	if last == 0 {
		return s, false
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// foldMember is a row of a fold group: its index and its place.
type foldMember struct {
	i     int
	place string
}

// foldState is a folded row's state: a correction of any place is a
// correction of the behaviour, the latest one applying (a dismissal sticks
// when the behaviour shows up at a new place). With none, the row is open;
// after a false positive it stays one unless a place's false positive was
// regressed (a new crash state, a repro where there was none); after an
// accepted risk it is what that place's row is (accepted, or open once
// expired); after a resolution it is regressed when any place was reported
// after the resolution entry, else resolved.
func foldState(rows []fleet.Cluster, ms []foldMember) (fleet.ClusterState, *uint64, string) {
	var latest *fleet.Cluster
	for _, m := range ms {
		r := &rows[m.i]
		if r.Correction != nil && (latest == nil || *r.Correction > *latest.Correction) {
			latest = r
		}
	}
	if latest == nil {
		return fleet.ClusterOpen, nil, ""
	}
	at := *latest.Correction
	switch correctionKind(latest) {
	case fleet.KindFalsePositive:
		for _, m := range ms {
			r := &rows[m.i]
			if r.State == fleet.ClusterRegressed && correctionKind(r) == fleet.KindFalsePositive {
				return fleet.ClusterRegressed, &at, r.StateReason
			}
		}
		return fleet.ClusterFalsePositive, &at, ""
	case fleet.KindAcceptedRisk:
		return latest.State, &at, latest.StateReason
	}
	for _, m := range ms {
		if e := rows[m.i].Entries; len(e) > 0 && e[len(e)-1] > at {
			return fleet.ClusterRegressed, &at, ""
		}
	}
	return fleet.ClusterResolved, &at, ""
}

// correctionKind is the kind of the correction that set a row's state.
func correctionKind(r *fleet.Cluster) fleet.Kind {
	if r.Correction == nil {
		return ""
	}
	for i := len(r.Corrections) - 1; i >= 0; i-- {
		if r.Corrections[i].Entry == *r.Correction {
			return r.Corrections[i].Kind
		}
	}
	if r.State == fleet.ClusterFalsePositive {
		return fleet.KindFalsePositive
	}
	return fleet.KindResolution
}

// foldNotes is the correction history of a folded row: every place's,
// oldest first, the latest maxNotes.
func foldNotes(rows []fleet.Cluster, ms []foldMember) []fleet.CorrectionNote {
	n := 0
	for _, m := range ms {
		n += len(rows[m.i].Corrections)
	}
	if n == 0 {
		return nil // most rows: nothing to sort
	}
	out := make([]fleet.CorrectionNote, 0, n)
	for _, m := range ms {
		out = append(out, rows[m.i].Corrections...)
	}
	slices.SortStableFunc(out, func(a, b fleet.CorrectionNote) int { return cmp.Compare(a.Entry, b.Entry) })
	out = slices.CompactFunc(out, func(a, b fleet.CorrectionNote) bool { return a.Entry == b.Entry && a.Ref == b.Ref })
	if len(out) > maxNotes {
		out = out[len(out)-maxNotes:]
	}
	return out
}

// maxFoldEntries bounds the entries a folded row lists: the first and the
// latest.
const maxFoldEntries = 12
