package labelgen_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triage/labelgen"
)

// evaluate runs triage over log and scores it.
func evaluate(tb testing.TB, log *labelgen.Log) labelgen.Scores {
	tb.Helper()
	th, _ := strconv.ParseFloat(os.Getenv("TH"), 64)
	e, err := triage.NewEngine(triage.Config{Trusted: log.Header.Trusted, MergeThreshold: th})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.Add(log.TriageEntries()); err != nil {
		tb.Fatal(err)
	}
	pred := make([]string, len(log.Entries))
	for i, en := range log.Entries {
		pred[i], _ = e.ClusterOf(en.Index)
	}
	r := e.Report(log.Header.Now)
	ranking := make([]string, len(r.Clusters))
	for i, row := range r.Clusters {
		ranking[i] = row.ID
	}
	return labelgen.Evaluate(log, pred, ranking, 10)
}

func TestScratchEval(t *testing.T) {
	var minP, minR, sumP, sumR, sumN float64 = 1, 1, 0, 0, 0
	defer func() { t.Logf("min P %.3f R %.3f mean P %.3f R %.3f ndcg %.3f", minP, minR, sumP/8, sumR/8, sumN/8) }()
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6, 7, 8} {
		log := labelgen.Generate(labelgen.Options{Seed: seed})
		s := evaluate(t, log)
		minP, minR = min(minP, s.Precision), min(minR, s.Recall)
		sumP, sumR, sumN = sumP+s.Precision, sumR+s.Recall, sumN+s.NDCG
		t.Logf("seed %d: %d entries: P %.3f R %.3f bP %.3f bR %.3f ndcg %.3f pred %d true %d", seed, len(log.Entries), s.Precision, s.Recall, s.BCubedPrecision, s.BCubedRecall, s.NDCG, s.PredClusters, s.TrueClusters)
	}
}
