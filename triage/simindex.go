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
	postings map[uint64][]int32 // (surface, token) -> sigs, oldest first
	df       map[uint64]int32   // (surface, token) -> trusted sigs holding it
	n        map[uint32]int32   // surface -> trusted sigs
	stamp    []uint32           // per sig: query generation that saw it
	gen      uint32
	allDF    bool            // count every sig in df (no trusted senders configured)
	lead     map[int32]int32 // cluster -> its leader sig

	qw    []float64 // scratch: query token weights
	order []int     // scratch: query token order
}

type sig struct {
	cluster int32
	surface uint32
	trusted bool
	toks    []uint64
}

const maxPostingScan = 2048

func newSimIndex(allDF bool) *simIndex {
	return &simIndex{postings: map[uint64][]int32{}, df: map[uint64]int32{}, n: map[uint32]int32{}, lead: map[int32]int32{}, allDF: allDF}
}

// key combines a surface id and a token hash.
func (s *simIndex) key(surface uint32, tok uint64) uint64 {
	return tok ^ (uint64(surface)+1)*0x9E3779B97F4A7C15
}

// leadFactor times the threshold is the least similarity a new summary
// needs to its cluster's leader (first trusted summary), so that single-link
// chains of small rewordings cannot drift from one bug to another.
const leadFactor = 0.5

func (s *simIndex) add(cluster int32, surface uint32, toks []uint64, trusted bool) {
	id := int32(len(s.sigs))
	if _, ok := s.lead[cluster]; !ok && (trusted || s.allDF) {
		s.lead[cluster] = id
	}
	s.sigs = append(s.sigs, sig{cluster: cluster, surface: surface, trusted: trusted, toks: slices.Clone(toks)})
	s.stamp = append(s.stamp, 0)
	counted := trusted || s.allDF
	if counted {
		s.n[surface]++
	}
	for _, t := range toks {
		k := s.key(surface, t)
		s.postings[k] = append(s.postings[k], id)
		if counted {
			s.df[k]++
		}
	}
}

func (s *simIndex) weight(n int32, k uint64) float64 {
	return 1 + math.Log(float64(n+1)/float64(s.df[k]+1))
}

// query returns the cluster of the most similar indexed summary with
// similarity at least t whose cluster accept allows (after mapping through
// root), or -1. trustedOnly limits candidates to trusted summaries. Ties go to
// the oldest cluster.
func (s *simIndex) query(surface uint32, q []uint64, t float64, trustedOnly bool, root func(int32) int32, accept func(int32) bool) (best int32, bestSim float64) {
	best = -1
	if len(q) == 0 || t > 1 {
		return best, 0
	}
	n := s.n[surface]
	s.qw = s.qw[:0]
	s.order = s.order[:0]
	var total float64
	for i, tok := range q {
		w := s.weight(n, s.key(surface, tok))
		s.qw = append(s.qw, w)
		s.order = append(s.order, i)
		total += w
	}
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
		clear(s.stamp)
		s.gen = 1
	}
	remaining := total
	for _, i := range s.order {
		if remaining < t*total {
			break
		}
		remaining -= s.qw[i]
		list := s.postings[s.key(surface, q[i])]
		if len(list) > maxPostingScan {
			list = list[len(list)-maxPostingScan:]
		}
		for _, id := range list {
			if s.stamp[id] == s.gen {
				continue
			}
			s.stamp[id] = s.gen
			sg := &s.sigs[id]
			if sg.surface != surface || trustedOnly && !sg.trusted {
				continue
			}
			sim := s.similarity(n, surface, q, total, sg.toks)
			if sim < t || sim < bestSim {
				continue
			}
			c := root(sg.cluster)
			if sim == bestSim && best >= 0 && c >= best {
				continue
			}
			if lead, ok := s.lead[c]; ok && lead != id && s.similarity(n, surface, q, total, s.sigs[lead].toks) < t*leadFactor {
				continue // close to a member, too far from what the cluster is about
			}
			if !accept(c) {
				continue
			}
			best, bestSim = c, sim
		}
	}
	return best, bestSim
}

// similarity is the weighted Jaccard of the query (weights in s.qw, summing
// to qTotal) and toks; both are sorted.
func (s *simIndex) similarity(n int32, surface uint32, q []uint64, qTotal float64, toks []uint64) float64 {
	var inter, other float64
	i, j := 0, 0
	for i < len(q) && j < len(toks) {
		switch {
		case q[i] == toks[j]:
			inter += s.qw[i]
			i++
			j++
		case q[i] < toks[j]:
			i++
		default:
			other += s.weight(n, s.key(surface, toks[j]))
			j++
		}
	}
	for ; j < len(toks); j++ {
		other += s.weight(n, s.key(surface, toks[j]))
	}
	union := qTotal + other
	if union == 0 {
		return 0
	}
	return inter / union
}
