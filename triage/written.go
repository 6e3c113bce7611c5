package triage

// writtenKeys maps written keys (see Engine.assign) to clusters: an
// open-addressing table of 64-bit hashes, at most three quarters full
// (linear probing stays within a cache line or two), which costs a
// fraction of a Go map's lookup on triage's hot path, where every finding
// looks one up. Nothing is ever evicted: a written key keeps the cluster
// its first finding got, so the clusters are a function of the log, the
// same in every process whatever its hash seed.
type writtenKeys struct {
	slots []writtenSlot
	n     int
}

// writtenSlot is one written key's cluster; h is never 0, which marks an
// empty slot. pub is false while only untrusted findings used the key.
type writtenSlot struct {
	h   uint64
	c   int32
	pub bool
}

// find returns the slot index for hash h, and whether h is there; when it is
// not, the index is the empty slot set would fill. The index is valid until
// the next set.
func (w *writtenKeys) find(h uint64) (i uint64, ok bool) {
	if w.slots == nil {
		w.slots = make([]writtenSlot, 1<<12)
	}
	h |= 1
	mask := uint64(len(w.slots) - 1)
	for i = home(h, mask); ; i = (i + 1) & mask {
		switch w.slots[i].h {
		case h:
			return i, true
		case 0:
			return i, false
		}
	}
}

// set stores cluster c for hash h at index i, which find returned for h.
func (w *writtenKeys) set(i, h uint64, c int32, pub bool) {
	s := &w.slots[i]
	if s.h == 0 {
		w.n++
	}
	*s = writtenSlot{h: h | 1, c: c, pub: pub}
	if 4*w.n > 3*len(w.slots) {
		old := w.slots
		w.slots = make([]writtenSlot, 2*len(old))
		for _, s := range old {
			if s.h != 0 {
				j, _ := w.find(s.h)
				w.slots[j] = s
			}
		}
	}
}

// home is the first slot hash h probes in a table of mask+1 slots (a power
// of two): the multiply spreads hashes whose low bits agree.
func home(h, mask uint64) uint64 { return (h * hashK1) >> 7 & mask }
