package triage

import (
	"cmp"
	"slices"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// cluster is one group of findings about the same problem.
type cluster struct {
	id         string // fleet.Fingerprint of its first finding: stable across runs
	surface    fleet.Surface
	freeForm   bool
	anchored   bool // holds a repro group: another repro cannot join by similarity
	needsRepro bool
	sigs       uint8
	corr       corr
	rep        rep
	counted    [2]stats // [0] trusted senders' findings, [1] the others'
	merged     []int32  // clusters merged into this one by duplicate-of
	split      uint64   // the unmerge record that split its first entry out of another cluster; 0: none
	unfold     uint64   // the unmerge record that took it out of a folded row; 0: none
	reopen     reopen   // what regressed a false positive
	notes      []fleet.CorrectionNote
	cause      *fleet.Cause // the latest valid cause record's; never changed once set (reports share it)
}

// corr is the latest state correction applied to a cluster.
type corr struct {
	kind   fleet.Kind // "", KindResolution, KindFalsePositive or KindAcceptedRisk
	index  uint64     // the correction entry
	until  time.Time  // KindAcceptedRisk: when it ends; zero: never
	reason string
}

// reopen is the finding that regressed a false positive (a new crash
// state, a repro where there was none) and why; index 0: none.
type reopen struct {
	index  uint64
	reason string
}

// rep is what a cluster shows: the first trusted finding's title and the
// first trusted repro, or an untrusted one's while no trusted finding exists.
type rep struct {
	set     bool
	trusted bool
	index   uint64
	title   string
	repro   *fleet.Repro
}

// recentEntries is how many of a cluster's latest entry indexes a report lists
// besides its first.
const recentEntries = 19

// stats aggregates one trust class of a cluster's findings.
type stats struct {
	n           int
	first, last uint64 // lowest and highest entry index
	tFirst      int64  // earliest and latest entry time, unix seconds
	tLast       int64
	maxSev      int8     // fleet.Severity.Rank of the most severe
	head        [6]int32 // sources[:6], inline
	sources     []int32
	srcSet      map[int32]struct{} // sources as a set, once the list is long
	pairs       pairSet            // distinct (source, run) pairs
	recent      []uint64
	rpos        int
}

func (s *stats) add(index uint64, t int64, sev int8, src int32, pair uint64) {
	if s.n == 0 {
		s.first, s.last, s.tFirst, s.tLast, s.maxSev = index, index, t, t, sev
	} else {
		s.first, s.last = min(s.first, index), max(s.last, index)
		s.tFirst, s.tLast = min(s.tFirst, t), max(s.tLast, t)
		s.maxSev = max(s.maxSev, sev)
	}
	s.n++
	s.addSource(src)
	s.pairs.add(pair)
	if len(s.recent) < recentEntries {
		s.recent = append(s.recent, index)
	} else {
		s.recent[s.rpos] = index
		s.rpos = (s.rpos + 1) % recentEntries
	}
}

// maxSourceList is how many distinct sources a cluster's stats search as a
// list before keeping a set (untrusted floods come from many addresses).
const maxSourceList = 16

// addSource adds src to the distinct sources, in order of arrival. The
// first few are also kept in the struct itself: every finding checks them,
// and a cluster rarely has more sources than the fleet has specialists.
func (s *stats) addSource(src int32) {
	k := len(s.sources)
	for _, x := range s.head[:min(k, len(s.head))] {
		if x == src {
			return
		}
	}
	switch {
	case k < len(s.head):
		s.head[k] = src
	case s.srcSet != nil:
		if _, ok := s.srcSet[src]; ok {
			return
		}
		s.srcSet[src] = struct{}{}
	case slices.Contains(s.sources[len(s.head):], src):
		return
	case k == maxSourceList:
		s.srcSet = make(map[int32]struct{}, 2*maxSourceList)
		for _, x := range s.sources {
			s.srcSet[x] = struct{}{}
		}
		s.srcSet[src] = struct{}{}
	}
	s.sources = append(s.sources, src)
}

// merge adds o's findings to s.
func (s *stats) merge(o *stats) {
	if o.n == 0 {
		return
	}
	if s.n == 0 {
		*s = *o
		*o = stats{}
		return
	}
	s.first, s.last = min(s.first, o.first), max(s.last, o.last)
	s.tFirst, s.tLast = min(s.tFirst, o.tFirst), max(s.tLast, o.tLast)
	s.maxSev = max(s.maxSev, o.maxSev)
	s.n += o.n
	for _, src := range o.sources {
		s.addSource(src)
	}
	s.pairs.union(&o.pairs)
	all := append(s.entries(), o.entries()...)
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) > recentEntries {
		all = all[len(all)-recentEntries:]
	}
	s.recent, s.rpos = all, 0
	*o = stats{}
}

// entries returns the recent indexes in ascending order.
func (s *stats) entries() []uint64 {
	out := make([]uint64, 0, len(s.recent))
	out = append(out, s.recent[s.rpos:]...)
	out = append(out, s.recent[:s.rpos]...)
	return out
}

// pairSet is a set of nonzero-mapped 64-bit hashes: inline while small,
// then an open-addressing table (half full at most), which costs a third of
// a Go map per insert on triage's hot path.
type pairSet struct {
	small [4]uint64
	n     int
	table []uint64 // 0 marks an empty slot; hashes are stored |1
}

func (p *pairSet) add(h uint64) {
	h |= 1 // never 0; halves the hash space, which 2^63 still covers
	if p.table == nil {
		for _, x := range p.small[:min(p.n, len(p.small))] {
			if x == h {
				return
			}
		}
		if p.n < len(p.small) {
			p.small[p.n] = h
			p.n++
			return
		}
		p.table = make([]uint64, 16)
		for _, x := range p.small {
			p.insert(x)
		}
		p.n = len(p.small)
	}
	if p.insert(h) {
		p.n++
		if 2*p.n > len(p.table) {
			old := p.table
			p.table = make([]uint64, 2*len(old))
			for _, x := range old {
				if x != 0 {
					p.insert(x)
				}
			}
		}
	}
}

// insert puts h in the table and reports whether it was new.
func (p *pairSet) insert(h uint64) bool {
	mask := uint64(len(p.table) - 1)
	for i := home(h, mask); ; i = (i + 1) & mask {
		switch p.table[i] {
		case h:
			return false
		case 0:
			p.table[i] = h
			return true
		}
	}
}

func (p *pairSet) len() int { return p.n }

func (p *pairSet) union(o *pairSet) {
	if o.table == nil {
		for _, x := range o.small[:o.n] {
			p.add(x)
		}
		return
	}
	for _, x := range o.table {
		if x != 0 {
			p.add(x)
		}
	}
}

// merge folds cluster src into dst (a duplicate-of correction): dst keeps
// its id and title, gains src's findings, and takes the later of the two
// state corrections, so that a resolved duplicate of a bug still being
// reported becomes a regression of it.
func (e *Engine) merge(src, dst int32) {
	s, d := &e.clusters[src], &e.clusters[dst]
	e.parent[src] = dst
	for k := range d.counted {
		d.counted[k].merge(&s.counted[k])
	}
	if s.corr.index > d.corr.index {
		d.corr, d.reopen = s.corr, s.reopen
	}
	if len(s.notes) > 0 {
		// A new slice: reports share the old ones (Engine.row).
		notes := append(slices.Clone(d.notes), s.notes...)
		slices.SortStableFunc(notes, func(a, b fleet.CorrectionNote) int { return cmp.Compare(a.Entry, b.Entry) })
		if len(notes) > maxNotes {
			notes = notes[len(notes)-maxNotes:]
		}
		d.notes, s.notes = notes, nil
	}
	if s.cause != nil && (d.cause == nil || s.cause.Entry > d.cause.Entry) {
		d.cause = s.cause
	}
	d.needsRepro = d.needsRepro || s.needsRepro
	d.anchored = d.anchored || s.anchored
	switch {
	case !d.rep.set || s.rep.trusted && !d.rep.trusted:
		d.rep = s.rep
	case d.rep.repro == nil && s.rep.repro != nil && s.rep.trusted == d.rep.trusted:
		d.rep.repro = s.rep.repro
	}
	d.merged = append(d.merged, src)
	d.merged = append(d.merged, s.merged...)
	s.merged = nil
}
