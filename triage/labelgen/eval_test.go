package labelgen_test

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triage/labelgen"
)

var update = flag.Bool("update", false, "regenerate the committed labelled log")

// committedLog is the labelled log the eval test asserts the targets on.
var committedLog = filepath.Join("..", "testdata", "labelled-seed1.jsonl")

// committedOptions generate committedLog.
var committedOptions = labelgen.Options{Seed: 1}

// run triages a labelled log and returns the engine and its report.
func run(tb testing.TB, log *labelgen.Log) (*triage.Engine, triage.Report) {
	tb.Helper()
	e, err := triage.NewEngine(triage.Config{Trusted: log.Header.Trusted})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.Add(log.TriageEntries()); err != nil {
		tb.Fatal(err)
	}
	return e, e.Report(log.Header.Now)
}

// evaluate triages log and scores it against its labels.
func evaluate(tb testing.TB, log *labelgen.Log) labelgen.Scores {
	tb.Helper()
	e, r := run(tb, log)
	return score(log, clusters(e, log), r)
}

// score scores the clusters pred of log's entries and the ranking of report
// r against log's labels.
func score(log *labelgen.Log, pred []string, r triage.Report) labelgen.Scores {
	ranking := make([]string, len(r.Clusters))
	for i, row := range r.Clusters {
		ranking[i] = row.ID
	}
	return labelgen.Evaluate(log, pred, ranking, 10)
}

// clusters returns the cluster of each of log's entries ("" when none).
func clusters(e *triage.Engine, log *labelgen.Log) []string {
	pred := make([]string, len(log.Entries))
	for i, en := range log.Entries {
		pred[i], _ = e.ClusterOf(en.Index)
	}
	return pred
}

func readLog(tb testing.TB, path string) *labelgen.Log {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	log, err := labelgen.Read(f)
	if err != nil {
		tb.Fatal(err)
	}
	return log
}

func logScores(tb testing.TB, name string, n int, s labelgen.Scores) {
	tb.Helper()
	tb.Logf("%s: %d entries, %d labelled in %d true clusters -> %d predicted: pairwise P %.3f R %.3f, B-cubed P %.3f R %.3f, NDCG@%d %.3f",
		name, n, s.Items, s.TrueClusters, s.PredClusters, s.Precision, s.Recall, s.BCubedPrecision, s.BCubedRecall, s.K, s.NDCG)
}

// TestEval asserts the targets on the committed labelled log:
// pairwise precision ≥ 0.95 and recall ≥ 0.9.
func TestEval(t *testing.T) {
	log := readLog(t, committedLog)
	s := evaluate(t, log)
	logScores(t, filepath.Base(committedLog), len(log.Entries), s)
	if s.Precision < 0.95 {
		t.Errorf("pairwise precision %.3f, target 0.95", s.Precision)
	}
	if s.Recall < 0.9 {
		t.Errorf("pairwise recall %.3f, target 0.9", s.Recall)
	}
	if s.NDCG < 0.9 {
		t.Errorf("NDCG@10 %.3f, want at least 0.9", s.NDCG)
	}
}

// TestEvalSeeds scores fresh logs from other seeds, so the targets are not
// met by one lucky log; the floors are a little below the targets.
func TestEvalSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("generates eight logs")
	}
	var minP, minR, sumP, sumR, sumN float64 = 1, 1, 0, 0, 0
	seeds := []uint64{2, 3, 4, 5, 6, 7, 8, 9}
	for _, seed := range seeds {
		log := labelgen.Generate(labelgen.Options{Seed: seed})
		s := evaluate(t, log)
		logScores(t, "seed "+strconv.FormatUint(seed, 10), len(log.Entries), s)
		minP, minR = min(minP, s.Precision), min(minR, s.Recall)
		sumP, sumR, sumN = sumP+s.Precision, sumR+s.Recall, sumN+s.NDCG
	}
	n := float64(len(seeds))
	t.Logf("over %d seeds: pairwise P mean %.3f min %.3f, R mean %.3f min %.3f, NDCG@10 mean %.3f", len(seeds), sumP/n, minP, sumR/n, minR, sumN/n)
	if sumP/n < 0.95 || sumR/n < 0.9 || minP < 0.93 || minR < 0.88 {
		t.Error("below the targets on average, or far below on one seed")
	}
}

// TestEvalMillion scores the benchmarks' million-entry log (5,000 bugs, most
// of them the same kinds of bug in different modules, which is what makes
// precision hard) and holds it to the targets, pairwise precision ≥ 0.95
// and recall ≥ 0.9: TRIAGE_EVAL_1M=1 go test ./triage/labelgen -run Million -v
func TestEvalMillion(t *testing.T) {
	if os.Getenv("TRIAGE_EVAL_1M") == "" {
		t.Skip("set TRIAGE_EVAL_1M=1 (takes a minute)")
	}
	log := labelgen.Generate(millionOptions)
	e, r := run(t, log)
	pred := clusters(e, log)
	s := score(log, pred, r)
	logScores(t, "1M", len(log.Entries), s)
	if s.Precision < 0.95 || s.Recall < 0.9 {
		t.Errorf("pairwise precision %.3f, recall %.3f at 1M: targets 0.95 and 0.9", s.Precision, s.Recall)
	}
	// The clusters are a function of the log: another engine, with its own
	// hash seed, puts every entry where this one did. (A bounded key cache
	// once made them depend on what it had evicted: ±10 clusters here.)
	e2, _ := run(t, log)
	again := clusters(e2, log)
	for i := range pred {
		if pred[i] != again[i] {
			t.Errorf("entry %d: cluster %q, and %q in a second engine", log.Entries[i].Index, pred[i], again[i])
			break
		}
	}
}

// TestEvalExternal scores any log in the labelled format:
// TRIAGE_EVAL_LOG=path/to/log.jsonl go test ./triage/labelgen -run External -v
func TestEvalExternal(t *testing.T) {
	path := os.Getenv("TRIAGE_EVAL_LOG")
	if path == "" {
		t.Skip("set TRIAGE_EVAL_LOG to a labelled log")
	}
	log := readLog(t, path)
	logScores(t, path, len(log.Entries), evaluate(t, log))
}

// TestCommittedLogIsCurrent keeps the committed log what the generator
// makes; -update rewrites it.
func TestCommittedLogIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := labelgen.Generate(committedOptions).Write(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committedLog, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(committedLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s is not what Generate(%+v) makes: run go test ./triage/labelgen -run Committed -update", committedLog, committedOptions)
	}
	back, err := labelgen.Read(bytes.NewReader(got))
	if err != nil || len(back.Entries) < 5000 {
		t.Errorf("read back: %v, %d entries", err, len(back.Entries))
	}
}

// TestIncrementalEqualsBatch adds the log in random slices and compares
// every cluster and the report with a single Add.
func TestIncrementalEqualsBatch(t *testing.T) {
	log := readLog(t, committedLog)
	_, want := run(t, log)
	e, err := triage.NewEngine(triage.Config{Trusted: log.Header.Trusted})
	if err != nil {
		t.Fatal(err)
	}
	es := log.TriageEntries()
	r := rand.New(rand.NewPCG(7, 7))
	for len(es) > 0 {
		n := min(len(es), 1+r.IntN(300))
		if err := e.Add(es[:n]); err != nil {
			t.Fatal(err)
		}
		if r.IntN(10) == 0 {
			e.Report(time.Now()) // reports in between change nothing
		}
		es = es[n:]
	}
	if diff := cmp.Diff(want, e.Report(log.Header.Now)); diff != "" {
		t.Errorf("incremental report differs from batch (-batch +incremental):\n%s", diff)
	}
}

// TestAttacksFail checks what the generator's adversary tried.
func TestAttacksFail(t *testing.T) {
	log := readLog(t, committedLog)
	_, r := run(t, log)
	forged := 0
	for _, e := range log.Entries {
		if e.Role == "forged-correction" {
			forged++
		}
	}
	if r.Totals.CorrectionsIgnored != forged || forged == 0 {
		t.Errorf("%d corrections ignored, %d forged", r.Totals.CorrectionsIgnored, forged)
	}
	for _, row := range r.Clusters[:10] {
		if !row.Trusted || !row.State.Active() {
			t.Errorf("rank %d is %s trusted=%v: %q", row.Rank, row.State, row.Trusted, row.Title)
		}
	}
	for _, w := range triage.WorkItems(r) {
		for _, c := range r.Clusters {
			if c.ID == w.ID && (!c.Trusted || c.FreeForm) {
				t.Errorf("work item %s is not a trusted finding", w.ID)
			}
		}
	}
}

func TestEvaluate(t *testing.T) {
	log := &labelgen.Log{
		Header: labelgen.Header{Clusters: map[string]*labelgen.Cluster{"a": {Priority: 3}, "b": {Priority: 1}, "c": {}}},
		Entries: []labelgen.Entry{
			{Cluster: "a"}, {Cluster: "a"}, {Cluster: "a"}, {Cluster: "b"}, {Cluster: "b"}, {Cluster: "c"}, {},
		},
	}
	// a split in two, b merged with c.
	pred := []string{"1", "1", "2", "3", "3", "3", "4"}
	s := labelgen.Evaluate(log, pred, []string{"3", "1", "2"}, 10)
	// pairs: predicted 1:1 + 3:3 = 4, true a:3 + b:1 = 4, shared 1 + 1 = 2.
	if s.Precision != 0.5 || s.Recall != 0.5 || s.Items != 6 {
		t.Errorf("P %v R %v items %d, want 0.5, 0.5, 6", s.Precision, s.Recall, s.Items)
	}
	// ranking b (1 at rank 1), a (3 at rank 2), a again (0): 1/1 + 3/log2(3);
	// ideal 3/1 + 1/log2(3).
	want := (1 + 3/math.Log2(3)) / (3 + 1/math.Log2(3))
	if math.Abs(s.NDCG-want) > 1e-9 {
		t.Errorf("NDCG %v, want %v", s.NDCG, want)
	}
}
