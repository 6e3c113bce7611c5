package triage

// What tells two similar summaries apart, learned from the log itself.
//
// At scale a surface holds many bugs of one kind in different places: the
// same broken link in another module's docs, the same latency breach on
// another path. Their reports share most words, and a paraphrase of one can
// look more like another bug's report than like its own. Weighted
// similarity cannot see that "ibis" and "siskin" name two modules while
// "umlaut" and "unicode" name one thing, but the log shows it: trusted
// summaries that are one template with one slot filled differently, yet sit
// in different clusters, make the two fillers rivals; a token whose
// presence alone (inside the template, not a trailing remark) is the
// difference between two clusters' summaries is a specific. Afterwards a
// summary that differs from the one it resembles by a pair of rivals, or by
// a specific, names something else and does not join it, whatever the
// wording around it.
//
// Learning reads trusted summaries only, so an untrusted sender cannot teach
// triage to split (or keep apart) anything.

// slotSeen is the first summary seen with a template or shape: its cluster
// and the token that filled the slot (or was left out).
type slotSeen struct {
	cluster int32
	tok     uint64
}

const (
	hashK1  = 0x9E3779B97F4A7C15
	hashK2  = 0xC2B2AE3D27D4EB4F
	maskTok = 0x5bd1e9955bd1e995 // marks a slot key
	bosTok  = 0x8ebc6af09c88c6e3 // before the first token
	eosTok  = 0x589965cc75374cc3 // after the last token
)

// maxFillers bounds the fillers remembered per slot.
const maxFillers = 8

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// posHash is token tok at position pos: sequences hash as the sum of their
// tokens' posHash, so one token can be masked or left out in O(1).
func posHash(tok uint64, pos int) uint64 { return mix64(tok + uint64(pos+1)*hashK1) }

func seqKey(surface uint32, sum uint64, n int) uint64 {
	return mix64(sum ^ uint64(n)*hashK2 ^ (uint64(surface)+1)*hashK1)
}

// learn records the templates and shapes of a trusted summary of cluster c
// and learns rivals and specifics from earlier ones of other clusters.
func (s *simIndex) learn(c int32, surface uint32, seq []uint64, root func(int32) int32) {
	n := len(seq)
	if n < 3 {
		return
	}
	var sum uint64
	for j, t := range seq {
		sum += posHash(t, j)
	}
	other := func(seen slotSeen) bool { return root(seen.cluster) != root(c) }
	full := seqKey(surface, sum, n)
	if seen, ok := s.dels[full]; ok && other(seen) {
		// An earlier summary was this one with one more token.
		s.specific[s.key(surface, seen.tok)] = struct{}{}
	}
	if _, ok := s.fulls[full]; !ok {
		s.fulls[full] = slotSeen{cluster: c}
	}
	// Prefix sums let each masked or shortened variant hash in O(1).
	var before uint64
	after := uint64(0) // Σ_{j>i} posHash(seq[j], j-1)
	for j := 1; j < n; j++ {
		after += posHash(seq[j], j-1)
	}
	for i, t := range seq {
		// The slot: the tokens around t (or the edges). Tokens that fill one
		// slot in different clusters are rivals.
		prev, next := uint64(bosTok), uint64(eosTok)
		if i > 0 {
			prev = seq[i-1]
		}
		if i+1 < n {
			next = seq[i+1]
		}
		slot := mix64(mix64(prev^(uint64(surface)+1)*hashK2)+next*hashK1) ^ maskTok
		fillers := s.slots[slot]
		known := false
		for _, seen := range fillers {
			if seen.tok == t {
				known = true
				continue
			}
			if other(seen) {
				s.rivals[pairKey(surface, t, seen.tok)] = struct{}{}
			}
		}
		if !known && len(fillers) < maxFillers {
			s.slots[slot] = append(fillers, slotSeen{cluster: c, tok: t})
		}
		if i > 0 && i < n-1 { // inside the template: not a trailing remark
			del := seqKey(surface, before+after, n-1)
			if seen, ok := s.fulls[del]; ok && other(seen) {
				s.specific[s.key(surface, t)] = struct{}{}
			}
			if _, ok := s.dels[del]; !ok {
				s.dels[del] = slotSeen{cluster: c, tok: t}
			}
		}
		before += posHash(t, i)
		if i+1 < n {
			after -= posHash(seq[i+1], i)
		}
	}
}

func pairKey(surface uint32, a, b uint64) uint64 {
	if a > b {
		a, b = b, a
	}
	return mix64(mix64(a^(uint64(surface)+1)*hashK2) + b*hashK1)
}

// conflicts reports whether the token sets q and t (both sorted) differ by a
// specific or by a pair of rivals.
func (s *simIndex) conflicts(surface uint32, q, t []uint64) bool {
	if len(s.specific) == 0 && len(s.rivals) == 0 {
		return false
	}
	var dq, dt [2 * maxTokens]uint64 // tokenize may add one token past maxTokens
	nq, nt := 0, 0
	i, j := 0, 0
	for i < len(q) || j < len(t) {
		switch {
		case j == len(t) || i < len(q) && q[i] < t[j]:
			dq[nq] = q[i]
			nq++
			i++
		case i == len(q) || t[j] < q[i]:
			dt[nt] = t[j]
			nt++
			j++
		default:
			i++
			j++
		}
	}
	for _, x := range dq[:nq] {
		if _, ok := s.specific[s.key(surface, x)]; ok {
			return true
		}
	}
	for _, y := range dt[:nt] {
		if _, ok := s.specific[s.key(surface, y)]; ok {
			return true
		}
	}
	if len(s.rivals) == 0 {
		return false
	}
	for _, x := range dq[:nq] {
		for _, y := range dt[:nt] {
			if _, ok := s.rivals[pairKey(surface, x, y)]; ok {
				return true
			}
		}
	}
	return false
}
