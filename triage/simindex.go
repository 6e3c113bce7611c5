package triage

import (
	"math"
	"slices"
)

// simIndex finds, for a new group's summary tokens, the most similar summary
// already indexed in the same surface, by IDF-weighted Jaccard similarity:
//
//	sim(A, B) = Σ_{t ∈ A∩B} w(t) / Σ_{t ∈ A∪B} w(t),  w(t) = 1 + ln((N+1)/(df(t)+1))
//
// where N is the number of trusted summaries indexed in the surface and
// df(t) how many of them hold t. Rare words (enum, llms.txt, CORS) weigh
// more than the words every report in a surface shares (compiler, fail).
// Only trusted summaries count towards df, so a flood of untrusted entries
// cannot reweigh the words of trusted findings.
//
// Candidates come from an inverted index on (surface, token). Weighted prefix
// filtering keeps queries cheap and exact: a summary B with sim(A, B) ≥ T
// shares weight at least T·|A| with A, so probing A's tokens from the
// heaviest down until the unprobed rest weighs less than T·|A| finds every
// such B. Each posting list scan is bounded to its newest maxPostingScan
// summaries, which only matters for floods of near-identical text.
type simIndex struct {
	sigs     []sig
	ids      map[uint64]int32 // (surface, token) -> a dense token id
	postings [][]int32        // token id -> sigs, oldest first
	df       []int32          // token id -> trusted sigs holding it
	n        map[uint32]int32 // surface -> trusted sigs
	state    []sigState       // per sig, what queries touch, kept together
	gen      uint32
	allDF    bool       // count every sig in df (no trusted senders configured)
	lead     []int32    // cluster -> its leader sig + 1 (0: none yet)
	members  [][]member // cluster -> its sigs

	// What distinguishes bugs, learned from trusted summaries (rivals.go).
	slots    map[uint64][]slotSeen // (surface, the tokens around a slot) -> the first fillers seen
	fulls    map[uint64]slotSeen   // (surface, whole sequence) -> the first summary with it
	dels     map[uint64]slotSeen   // (surface, sequence with one inner token left out) -> the first, and that token
	rivals   map[uint64]struct{}   // (surface, unordered token pair) that fill one slot in two clusters
	specific map[uint64]struct{}   // (surface, token) whose presence alone told two clusters apart

	placed  map[uint64]int32    // (surface, token sequence) of a trusted repro-less summary -> its cluster
	indexed map[uint64]struct{} // (surface, token sequence) already indexed as a sig

	also    int32   // after query: the runner-up cluster that passed every check, or -1
	alsoSim float64 // its similarity

	qw    []float64   // scratch: query token weights
	qid   []int32     // scratch: query token ids (-1: never indexed)
	qIDs  []idWeight  // scratch: the query's indexed tokens by id, sorted
	qRest []float64   // scratch: qRest[i] = Σ qIDs[i:].w, what a candidate can still share
	leads []leadMemo  // scratch: similarity to each verified cluster's leader, this query
	subst []substMemo // scratch: substitutes results of this query, per cluster
	order []int       // scratch: query token order
	cands []int32     // scratch: candidate sigs
	top   []int32     // scratch: the candidates verified (a min-heap by shared weight)
}

// less orders candidates by shared weight, then newer before older, so the
// heap's root is the one to drop first.
func (s *simIndex) less(a, b int32) bool {
	if x, y := s.state[a].acc, s.state[b].acc; x != y {
		return x < y
	}
	return a > b
}

func (s *simIndex) heapify(h []int32) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		s.down(h, i)
	}
}

func (s *simIndex) down(h []int32, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && s.less(h[r], h[l]) {
			m = r
		}
		if !s.less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sigState is the part of a sig every query touches, packed for locality.
type sigState struct {
	stamp   uint32  // the query generation that last saw it
	acc     float32 // query weight it shares, in that generation
	trusted bool    // from a trusted sender
}

type sig struct {
	cluster int32
	surface uint32
	trusted bool
	toks    []uint64 // sorted set
	ids     []int32  // the token ids of toks, sorted by id (what similarity merges)
	seq     []uint64 // in order of appearance
}

// member is one of a cluster's sigs, with its sequence's first and last
// token: substitution needs one of them shared.
type member struct {
	id          int32
	first, last uint64
}

type idWeight struct {
	id int32
	w  float64
}

type leadMemo struct {
	c   int32
	sim float64
}

type substMemo struct {
	c   int32
	hit bool
}

// maxPostingScan bounds the postings scanned per probed token (the newest
// ones), maxVerify the candidates whose similarity is computed per query.
const (
	maxPostingScan = 256
	maxVerify      = 32
)

func newSimIndex(allDF bool) *simIndex {
	return &simIndex{ids: map[uint64]int32{}, n: map[uint32]int32{}, allDF: allDF,
		slots: map[uint64][]slotSeen{}, fulls: map[uint64]slotSeen{}, dels: map[uint64]slotSeen{}, rivals: map[uint64]struct{}{}, specific: map[uint64]struct{}{},
		placed: map[uint64]int32{}, indexed: map[uint64]struct{}{}}
}

// key combines a surface id and a token hash.
func (s *simIndex) key(surface uint32, tok uint64) uint64 {
	return tok ^ (uint64(surface)+1)*0x9E3779B97F4A7C15
}

// leadFactor times the threshold is the least similarity a new summary
// needs to its cluster's leader (first trusted summary), so that single-link
// chains of small rewordings cannot drift from one bug to another.
const leadFactor = 0.5

func (s *simIndex) add(cluster int32, surface uint32, toks, seq []uint64, trusted bool, root func(int32) int32) {
	id := int32(len(s.sigs))
	s.grow(cluster)
	if s.lead[cluster] == 0 && (trusted || s.allDF) {
		s.lead[cluster] = id + 1
	}
	s.members[cluster] = append(s.members[cluster], member{id: id, first: seq[0], last: seq[len(seq)-1]})
	tids := make([]int32, len(toks))
	for i, t := range toks {
		tids[i] = s.tokenID(surface, t)
	}
	slices.Sort(tids)
	s.sigs = append(s.sigs, sig{cluster: cluster, surface: surface, trusted: trusted, toks: slices.Clone(toks), ids: tids, seq: slices.Clone(seq)})
	s.state = append(s.state, sigState{trusted: trusted})
	counted := trusted || s.allDF
	if counted {
		s.n[surface]++
		s.learn(cluster, surface, seq, root)
	}
	for _, k := range tids {
		s.postings[k] = append(s.postings[k], id)
		if counted {
			s.df[k]++
		}
	}
}

// tokenID returns the dense id of a surface's token, assigning one when new.
func (s *simIndex) tokenID(surface uint32, tok uint64) int32 {
	k := s.key(surface, tok)
	id, ok := s.ids[k]
	if !ok {
		id = int32(len(s.df))
		s.ids[k] = id
		s.df = append(s.df, 0)
		s.postings = append(s.postings, nil)
	}
	return id
}

// lookupID returns a token's id, or -1 when no summary held it yet.
func (s *simIndex) lookupID(surface uint32, tok uint64) int32 {
	if id, ok := s.ids[s.key(surface, tok)]; ok {
		return id
	}
	return -1
}

// weight is the IDF weight of token id (-1: a token no summary holds) in a
// surface of n trusted summaries.
func (s *simIndex) weight(n int32, id int32) float64 {
	var df int32
	if id >= 0 {
		df = s.df[id]
	}
	return 1 + logInt(n+1) - logInt(df+1)
}

// tokWeight is weight by token hash.
func (s *simIndex) tokWeight(n int32, surface uint32, tok uint64) float64 {
	return s.weight(n, s.lookupID(surface, tok))
}

// logTable holds ln(i) for small i: weights are computed for every token of
// every candidate, and math.Log showed in profiles.
var logTable = func() []float64 {
	t := make([]float64, 1<<14)
	for i := 1; i < len(t); i++ {
		t[i] = math.Log(float64(i))
	}
	return t
}()

func logInt(i int32) float64 {
	if int(i) < len(logTable) {
		return logTable[i]
	}
	return math.Log(float64(i))
}

// query returns the cluster of the most similar indexed summary with
// similarity at least t whose cluster accept allows (after mapping through
// root), or -1. q is the query's token set, qseq its token sequence: a
// candidate that is the same template with other words filled in
// (substitution) is no match. trustedOnly limits candidates to trusted
// summaries. Ties go to the oldest cluster.
func (s *simIndex) query(surface uint32, q, qseq []uint64, t float64, trustedOnly bool, root func(int32) int32, accept func(int32) bool) (best int32, bestSim float64) {
	best, s.also, s.alsoSim = -1, -1, 0
	if len(q) == 0 || t > 1 {
		return best, 0
	}
	n := s.n[surface]
	s.qw = s.qw[:0]
	s.qid = s.qid[:0]
	s.order = s.order[:0]
	s.subst = s.subst[:0]
	var total float64
	for i, tok := range q {
		id := s.lookupID(surface, tok)
		w := s.weight(n, id)
		s.qid = append(s.qid, id)
		s.qw = append(s.qw, w)
		s.order = append(s.order, i)
		total += w
	}
	s.qIDs = s.qIDs[:0]
	for i, id := range s.qid {
		if id >= 0 {
			s.qIDs = append(s.qIDs, idWeight{id, s.qw[i]})
		}
	}
	slices.SortFunc(s.qIDs, func(a, b idWeight) int { return int(a.id) - int(b.id) })
	s.qRest = slices.Grow(s.qRest[:0], len(s.qIDs)+1)[:len(s.qIDs)+1]
	s.qRest[len(s.qIDs)] = 0
	for i := len(s.qIDs) - 1; i >= 0; i-- {
		s.qRest[i] = s.qRest[i+1] + s.qIDs[i].w
	}
	s.leads = s.leads[:0]
	slices.SortFunc(s.order, func(a, b int) int {
		switch {
		case s.qw[a] > s.qw[b]:
			return -1
		case s.qw[a] < s.qw[b]:
			return 1
		}
		return a - b
	})
	s.gen++
	if s.gen == 0 { // wrapped: clear stale stamps
		for i := range s.state {
			s.state[i].stamp = 0
		}
		s.gen = 1
	}
	// Probe the heaviest tokens first, adding each candidate's shared
	// weight. A candidate needs shared weight at least t·total to reach
	// similarity t, so once the unprobed rest weighs less than that no new
	// candidate can qualify, and a candidate whose shared weight plus the
	// unprobed rest stays below it cannot either.
	need := t * total
	remaining := total
	s.cands = s.cands[:0]
	for _, i := range s.order {
		if remaining < need {
			break
		}
		remaining -= s.qw[i]
		if s.qid[i] < 0 {
			continue
		}
		list := s.postings[s.qid[i]]
		if len(list) > maxPostingScan {
			list = list[len(list)-maxPostingScan:]
		}
		w := float32(s.qw[i])
		for _, id := range list {
			st := &s.state[id]
			if st.stamp != s.gen {
				if trustedOnly && !st.trusted {
					continue
				}
				st.stamp, st.acc = s.gen, 0
				s.cands = append(s.cands, id)
			}
			st.acc += w
		}
	}
	// Verify the candidates that share the most weight first, at most
	// maxVerify of them: near-identical templates can make hundreds of
	// candidates, and the best match shares the most with the query.
	kept := s.top[:0]
	for _, id := range s.cands {
		if float64(s.state[id].acc)+remaining < need*(1-1e-6) {
			continue
		}
		if len(kept) < maxVerify {
			kept = append(kept, id)
			if len(kept) == maxVerify {
				s.heapify(kept)
			}
			continue
		}
		if s.less(kept[0], id) { // beats the weakest kept: replace it
			kept[0] = id
			s.down(kept, 0)
		}
	}
	s.top = kept
	slices.Sort(kept) // oldest first, so that ties go to the oldest
	for _, id := range kept {
		sg := &s.sigs[id]
		if sg.surface != surface { // a key collision across surfaces
			continue
		}
		sim := s.similarity(n, total, sg, t)
		if sim < t {
			continue
		}
		// The checks are pure, so their order is only about cost: the
		// cheapest and most selective first (on the 1M log, conflicts
		// rejects four in five of the candidates that reach it).
		if s.conflicts(surface, q, sg.toks) {
			continue // names something else than the summary it resembles
		}
		c := root(sg.cluster)
		if !accept(c) {
			continue
		}
		if lead, ok := s.leadOf(c); ok && lead != id && s.leadSim(c, lead, n, total, t*leadFactor) < t*leadFactor {
			continue // close to a member, too far from what the cluster is about
		}
		if s.substitutes(c, q, qseq, n, surface) {
			continue // the cluster holds this report with other specifics
		}
		// Keep the two best clusters, each scored by its most similar
		// summary; ties go to the older cluster.
		switch {
		case c == best:
			bestSim = max(bestSim, sim)
		case c == s.also:
			s.alsoSim = max(s.alsoSim, sim)
		case s.also < 0 || sim > s.alsoSim || sim == s.alsoSim && c < s.also:
			s.also, s.alsoSim = c, sim
		}
		if s.also >= 0 && (best < 0 || s.alsoSim > bestSim || s.alsoSim == bestSim && s.also < best) {
			best, bestSim, s.also, s.alsoSim = s.also, s.alsoSim, best, bestSim
		}
	}
	return best, bestSim
}

// substitutes reports whether qseq is the same template as one of cluster
// c's summaries with other words filled in: then it names another thing
// than that summary, and so than the cluster. Results are kept per query.
func (s *simIndex) substitutes(c int32, q, qseq []uint64, n int32, surface uint32) bool {
	for _, m := range s.subst {
		if m.c == c {
			return m.hit
		}
	}
	w := func(tok uint64) float64 {
		if i, ok := slices.BinarySearch(q, tok); ok {
			return s.qw[i]
		}
		return s.tokWeight(n, surface, tok)
	}
	hit := false
	first, last := qseq[0], qseq[len(qseq)-1]
	for _, m := range s.membersOf(c) {
		// Without a shared first or last token it is no substitution; the
		// member's own sequence need not be read.
		if (m.first == first || m.last == last) && substitution(qseq, s.sigs[m.id].seq, w) {
			hit = true
			break
		}
	}
	s.subst = append(s.subst, substMemo{c: c, hit: hit})
	return hit
}

// similarity is the weighted Jaccard of the query (its indexed tokens in
// s.qIDs, all its weights summing to qTotal) and sig sg, or -1 when it is
// below least: the merge stops as soon as what the candidate can still
// share cannot reach least of the union so far (most candidates verified
// fall short). Both merge by token id, so a candidate's tokens are one small
// array: verifying is bound by memory, not arithmetic.
func (s *simIndex) similarity(n int32, qTotal float64, sg *sig, least float64) float64 {
	q, ids := s.qIDs, sg.ids
	// The bound leaves a margin far above rounding, so a similarity at
	// least least is always computed in full, in the same order.
	least *= 1 - 1e-9
	var inter, other float64
	i, j := 0, 0
	for i < len(q) && j < len(ids) {
		switch {
		case q[i].id == ids[j]:
			inter += q[i].w
			i++
			j++
			continue
		case q[i].id < ids[j]:
			i++
		default:
			other += s.weight(n, ids[j])
			j++
		}
		if inter+s.qRest[i] < least*(qTotal+other) {
			return -1
		}
	}
	for ; j < len(ids); j++ {
		other += s.weight(n, ids[j])
	}
	union := qTotal + other
	if union == 0 {
		return 0
	}
	return inter / union
}

// leadSim is the query's similarity to cluster c's leader sig, computed once
// per query; -1 when below t, the least the lead check needs.
func (s *simIndex) leadSim(c, lead int32, n int32, qTotal, t float64) float64 {
	for _, m := range s.leads {
		if m.c == c {
			return m.sim
		}
	}
	sim := s.similarity(n, qTotal, &s.sigs[lead], t)
	s.leads = append(s.leads, leadMemo{c, sim})
	return sim
}

// grow makes room for cluster c in the per-cluster slices.
func (s *simIndex) grow(c int32) {
	if n := int(c) + 1; n > len(s.lead) {
		s.lead = append(s.lead, make([]int32, n-len(s.lead))...)
		s.members = append(s.members, make([][]member, n-len(s.members))...)
	}
}

// leadOf returns cluster c's leader sig: its first trusted one (any, when
// every sig counts).
func (s *simIndex) leadOf(c int32) (int32, bool) {
	if int(c) >= len(s.lead) || s.lead[c] == 0 {
		return 0, false
	}
	return s.lead[c] - 1, true
}

// membersOf returns cluster c's sigs.
func (s *simIndex) membersOf(c int32) []member {
	if int(c) >= len(s.members) {
		return nil
	}
	return s.members[c]
}

// mergeInto moves cluster src's summaries under dst.
func (s *simIndex) mergeInto(src, dst int32) {
	s.grow(max(src, dst))
	s.members[dst] = append(s.members[dst], s.members[src]...)
	s.members[src] = nil
	if s.lead[dst] == 0 {
		s.lead[dst] = s.lead[src]
	}
	s.lead[src] = 0
}

// compatible reports whether the leaders of clusters a and b are similar
// enough (t·leadFactor) and name no different things.
func (s *simIndex) compatible(a, b int32, t float64) bool {
	la, oka := s.leadOf(a)
	lb, okb := s.leadOf(b)
	if !oka || !okb {
		return false
	}
	x, y := &s.sigs[la], &s.sigs[lb]
	if x.surface != y.surface || s.conflicts(x.surface, x.toks, y.toks) {
		return false
	}
	n := s.n[x.surface]
	w := func(tok uint64) float64 { return s.tokWeight(n, x.surface, tok) }
	if substitution(x.seq, y.seq, w) {
		return false
	}
	var inter, union float64
	i, j := 0, 0
	for i < len(x.toks) || j < len(y.toks) {
		switch {
		case j == len(y.toks) || i < len(x.toks) && x.toks[i] < y.toks[j]:
			union += w(x.toks[i])
			i++
		case i == len(x.toks) || y.toks[j] < x.toks[i]:
			union += w(y.toks[j])
			j++
		default:
			inter += w(x.toks[i])
			union += w(x.toks[i])
			i++
			j++
		}
	}
	return union > 0 && inter/union >= t*leadFactor
}

// seqHash identifies a token sequence within a surface.
func (s *simIndex) seqHash(surface uint32, seq []uint64) uint64 {
	var sum uint64
	for j, t := range seq {
		sum += posHash(t, j)
	}
	return seqKey(surface, sum, len(seq))
}

// newSeq reports whether no sig with this sequence and trust was indexed
// yet, and records it: one wording indexed twice only takes a cluster's
// slots. Trust is part of the key so that an untrusted sender posting a
// wording first cannot keep the trusted one out of the index.
func (s *simIndex) newSeq(h uint64, trusted bool) bool {
	if trusted {
		h = mix64(h ^ hashK2)
	}
	if _, ok := s.indexed[h]; ok {
		return false
	}
	s.indexed[h] = struct{}{}
	return true
}
