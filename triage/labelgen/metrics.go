package labelgen

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// Scores is how well a clustering and ranking match a log's labels.
type Scores struct {
	// Precision and Recall are pairwise: of the pairs of entries put in one
	// cluster, the share that share a label; of the pairs that share a label,
	// the share put in one cluster.
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	// BCubedPrecision and BCubedRecall average the same questions per entry,
	// so that large clusters do not dominate.
	BCubedPrecision float64 `json:"bcubed_precision"`
	BCubedRecall    float64 `json:"bcubed_recall"`
	// NDCG is NDCG@K of the ranking against the labels' priorities: each
	// ranked cluster earns its majority label's priority the first time that
	// label appears (a split cluster's second half earns nothing).
	NDCG float64 `json:"ndcg"`
	K    int     `json:"k"`
	// Items is the number of labelled entries scored.
	Items        int `json:"items"`
	TrueClusters int `json:"true_clusters"`
	PredClusters int `json:"pred_clusters"`
}

// Evaluate scores pred, the predicted cluster of each of log's entries
// (pred[i] for log.Entries[i]; "" when the engine did not cluster it), and
// ranking, the predicted clusters in rank order, at depth k. Entries without
// a label are ignored; a labelled entry left unclustered counts as a
// cluster of its own.
func Evaluate(log *Log, pred []string, ranking []string, k int) Scores {
	type cell struct{ t, p string }
	cells := map[cell]int{}
	tn := map[string]int{}
	pn := map[string]int{}
	s := Scores{K: k}
	for i, e := range log.Entries {
		if e.Cluster == "" {
			continue
		}
		p := pred[i]
		if p == "" {
			p = "\x00single-" + strconv.Itoa(i)
		}
		cells[cell{e.Cluster, p}]++
		tn[e.Cluster]++
		pn[p]++
		s.Items++
	}
	s.TrueClusters, s.PredClusters = len(tn), len(pn)
	pairs := func(n int) float64 { return float64(n) * float64(n-1) / 2 }
	var tp, tpairs, ppairs float64
	for c, n := range cells {
		tp += pairs(n)
		s.BCubedPrecision += float64(n) * float64(n) / float64(pn[c.p])
		s.BCubedRecall += float64(n) * float64(n) / float64(tn[c.t])
	}
	for _, n := range tn {
		tpairs += pairs(n)
	}
	for _, n := range pn {
		ppairs += pairs(n)
	}
	s.Precision, s.Recall = ratio(tp, ppairs), ratio(tp, tpairs)
	if s.Items > 0 {
		s.BCubedPrecision /= float64(s.Items)
		s.BCubedRecall /= float64(s.Items)
	}

	// Majority label of each predicted cluster.
	best := map[string]cell{}
	bestN := map[string]int{}
	for c, n := range cells {
		if b, ok := best[c.p]; !ok || n > bestN[c.p] || n == bestN[c.p] && c.t < b.t {
			best[c.p], bestN[c.p] = c, n
		}
	}
	prio := func(label string) float64 {
		if c := log.Header.Clusters[label]; c != nil {
			return c.Priority
		}
		return 0
	}
	seen := map[string]bool{}
	var dcg float64
	for i, id := range ranking {
		if i >= k {
			break
		}
		b, ok := best[id]
		if !ok || seen[b.t] {
			continue
		}
		seen[b.t] = true
		dcg += prio(b.t) / math.Log2(float64(i+2))
	}
	var ideal []float64
	for _, c := range log.Header.Clusters {
		ideal = append(ideal, c.Priority)
	}
	slices.SortFunc(ideal, func(a, b float64) int { return cmp.Compare(b, a) })
	var idcg float64
	for i, p := range ideal[:min(k, len(ideal))] {
		idcg += p / math.Log2(float64(i+2))
	}
	s.NDCG = ratio(dcg, idcg)
	return s
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 1
	}
	return a / b
}
