package triage

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

var (
	fleetAddr    = addrOf(0xf1)
	operatorAddr = addrOf(0x0e)
	strangerAddr = addrOf(0xba)
	t0           = time.Date(2026, 11, 22, 4, 12, 0, 0, time.UTC)
)

func addrOf(b byte) fleet.Address {
	var a fleet.Address
	for i := range a {
		a[i] = b
	}
	return a
}

// entries turns texts into consecutive entries from sender, a minute apart.
func entries(from uint64, sender fleet.Address, texts ...string) []Entry {
	out := make([]Entry, len(texts))
	for i, t := range texts {
		idx := from + uint64(i)
		out[i] = Entry{Index: idx, Sender: sender, Time: t0.Add(time.Duration(idx) * time.Minute), Text: t}
	}
	return out
}

// MustEngine returns an engine that trusts the fleet and the operator.
func MustEngine(tb testing.TB, cfg Config) *Engine {
	tb.Helper()
	if cfg.Trusted == nil {
		cfg.Trusted = []fleet.Address{fleetAddr, operatorAddr}
	}
	e, err := NewEngine(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func mustAdd(tb testing.TB, e *Engine, es ...[]Entry) {
	tb.Helper()
	for _, batch := range es {
		if err := e.Add(batch); err != nil {
			tb.Fatal(err)
		}
	}
}

// partition returns the clusters of entries [0, n) as lists of indexes,
// in order of their first member; non-findings are left out.
func partition(e *Engine, n uint64) [][]uint64 {
	byID := map[string]int{}
	var out [][]uint64
	for i := range n {
		id, ok := e.ClusterOf(i)
		if !ok {
			continue
		}
		k, seen := byID[id]
		if !seen {
			k = len(out)
			byID[id] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}

func env(header, body string) string { return "qa/v1 " + header + "\n" + body }

func TestEngineClustering(t *testing.T) {
	tests := []struct {
		name  string
		texts []string
		want  [][]uint64
	}{
		{
			name: "repro key order, spacing, case and header order",
			texts: []string{
				env("source=qa-fuzz sev=high surface=compiler run=r-1", "compile panic on `enum E{}`\nrepro: qa_compile {\"source\":\"enum E{}\",\"mode\":\"strict\"}"),
				env("run=r-2 surface=Compiler\tsev=HIGH source=qa-smoke", "Compiler panics given an empty enum!\nrepro: qa_compile { \"mode\" : \"strict\" , \"SOURCE\": \"enum E{}\" }"),
			},
			want: [][]uint64{{0, 1}},
		},
		{
			name: "literals in repros: sandbox names, numbers, addresses",
			texts: []string{
				env("source=qa-smoke sev=critical surface=registry run=r-1", "release by a stranger succeeds\nrepro: qa_chain {\"method\":\"release\",\"params\":{\"name\":\"qa-r123-4\",\"nonce\":7}}"),
				env("source=qa-smoke sev=critical surface=registry run=r-2", "release by a stranger succeeds\nrepro: qa_chain {\"method\":\"release\",\"params\":{\"name\":\"qa-r98765-1\",\"nonce\":12}}"),
				env("source=qa-smoke sev=critical surface=registry run=r-3", "stranger can release\nrepro: qa_chain {\"method\":\"release\",\"params\":{\"name\":\"qa-r5-9\",\"nonce\":0,\"to\":\"0x00000000000000000000000000000000000000aa\"}}"),
				env("source=qa-smoke sev=critical surface=registry run=r-4", "stranger can release\nrepro: qa_chain {\"method\":\"release\",\"params\":{\"name\":\"qa-r6-1\",\"nonce\":3,\"to\":\"0x1234567890abcdef1234567890abcdef12345678\"}}"),
			},
			want: [][]uint64{{0, 1}, {2, 3}},
		},
		{
			name: "the same repro through another tool or on another surface is another bug",
			texts: []string{
				env("source=qa-fuzz sev=high surface=compiler", "compile panic on enum E{}\nrepro: qa_compile {\"source\":\"enum E{}\"}"),
				env("source=qa-fuzz sev=high surface=registry", "compile panic on enum E{}\nrepro: qa_compile {\"source\":\"enum E{}\"}"),
				env("source=qa-fuzz sev=high surface=compiler", "compile panic on enum E{}\nrepro: qa_publish {\"source\":\"enum E{}\"}"),
				env("source=qa-fuzz sev=high surface=compiler", "compile panic on struct S{}\nrepro: qa_compile {\"source\":\"struct S{}\"}"),
			},
			want: [][]uint64{{0}, {1}, {2}, {3}},
		},
		{
			name: "a crash state is one bug whatever the input; another state is another bug",
			texts: []string{
				env("source=qa-fuzz sev=high surface=compiler state=5c1e0a9d3b7f2a10 run=r-1", "Compiler crash on a 13-byte input: panic\nrepro: qa_compile {\"source\":\"enum E {}\"}"),
				env("source=qa-fuzz sev=high surface=compiler state=5c1e0a9d3b7f2a10 run=r-2", "Compiler crash on a 14-byte input: panic\nrepro: qa_compile {\"source\":\"enum E {}\\n\"}"),
				env("source=qa-fuzz sev=low surface=compiler state=5c1e0a9d3b7f2a10 flaky=true run=r-3", "Compiler crash did not reproduce\nrepro: qa_compile {\"source\":\"enum F { }\"}"),
				env("source=qa-fuzz sev=high surface=compiler state=0000000000000001 run=r-4", "Compiler crash on a 13-byte input: panic\nrepro: qa_compile {\"source\":\"enum E {}\"}"),
			},
			want: [][]uint64{{0, 1, 2}, {3}},
		},
		{
			name: "function selectors are not literals, addresses are",
			texts: []string{
				env("source=qa-security sev=critical surface=chain", "admin call does not revert\nrepro: qa_chain {\"method\":\"eth_call\",\"params\":{\"to\":\"0x00000000000000000000000000000000000000aa\",\"data\":\"0x8f1c2a3b\"}}"),
				env("source=qa-security sev=critical surface=chain", "admin call does not revert\nrepro: qa_chain {\"method\":\"eth_call\",\"params\":{\"to\":\"0x00000000000000000000000000000000000000bb\",\"data\":\"0x8f1c2a3b\"}}"),
				env("source=qa-security sev=critical surface=chain", "admin call does not revert\nrepro: qa_chain {\"method\":\"eth_call\",\"params\":{\"to\":\"0x00000000000000000000000000000000000000aa\",\"data\":\"0x4e7a9d10\"}}"),
			},
			want: [][]uint64{{0, 1}, {2}},
		},
		{
			name: "numbers in summaries without repro",
			texts: []string{
				env("source=qa-perf sev=medium surface=perf", "p95 latency of POST /call is 850ms, above the 500ms SLO"),
				env("source=qa-perf sev=medium surface=perf", "p95 latency of POST /call is 1210ms, above the 500ms SLO."),
				env("source=qa-perf sev=medium surface=perf", "p95 latency of POST /publish is 850ms, above the 500ms SLO"),
			},
			want: [][]uint64{{0, 1}, {2}},
		},
		{
			name: "reworded summaries merge, a different problem does not",
			texts: []string{
				env("source=qa-ux sev=low surface=docs", "dead link: /docs/publish in llms.txt returns 404"),
				env("source=qa-ux sev=low surface=docs", "llms.txt: the /docs/publish link is dead (404)"),
				env("source=qa-ux sev=info surface=docs", "/docs/publish in llms.txt is out of date: describes the old publish flow"),
			},
			want: [][]uint64{{0, 1}, {2}},
		},
		{
			name: "a report that omits the repro joins the cluster that has one",
			texts: []string{
				env("source=qa-fuzz sev=high surface=compiler", "compiler panics on an enum with zero variants\nrepro: qa_compile {\"source\":\"enum E{}\"}"),
				env("source=qa-ux sev=high surface=compiler", "the compiler panics on an enum with zero variants"),
			},
			want: [][]uint64{{0, 1}},
		},
		{
			name: "a new repro never joins a cluster that has another one",
			texts: []string{
				env("source=qa-fuzz sev=high surface=compiler", "compiler panics on an enum with zero variants\nrepro: qa_compile {\"source\":\"enum E{}\"}"),
				env("source=qa-fuzz sev=high surface=compiler", "compiler panics on an enum with zero variants\nrepro: qa_compile {\"source\":\"enum F { }\"}"),
			},
			want: [][]uint64{{0}, {1}},
		},
		{
			name: "free-form text clusters by its normalized text only",
			texts: []string{
				"The site is slow today",
				"the site is   slow today!",
				"site slow today?",
				"block 1234 looks stuck",
				"block 99 looks stuck",
			},
			want: [][]uint64{{0, 1}, {2}, {3, 4}},
		},
		{
			name: "meta summaries and corrections are not findings",
			texts: []string{
				env("source=qa-fuzz sev=high surface=compiler", "crash\nrepro: qa_compile {\"source\":\"x\"}"),
				env("source=qa-triage sev=meta surface=fleet kind=meta", "health: 1 open"),
				env("source=qa-operator sev=info surface=fleet kind=needs-repro ref=0", ""),
			},
			want: [][]uint64{{0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := MustEngine(t, Config{})
			mustAdd(t, e, entries(0, fleetAddr, tc.texts...))
			if diff := cmp.Diff(tc.want, partition(e, uint64(len(tc.texts)))); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}

func rowOf(t *testing.T, r fleet.Report, id string) fleet.Cluster {
	t.Helper()
	for _, row := range r.Clusters {
		if row.ID == id {
			return row
		}
	}
	t.Fatalf("no cluster %s in report", id)
	return fleet.Cluster{}
}

func mustCluster(t *testing.T, e *Engine, index uint64) string {
	t.Helper()
	id, ok := e.ClusterOf(index)
	if !ok {
		t.Fatalf("entry %d is not in a cluster", index)
	}
	return id
}

const (
	crashA = "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-%d\ncompile panic on enum E{}\nrepro: qa_compile {\"source\":\"enum E{}\"}"
	crashB = "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-%d\ncompiler hangs on struct S{}\nrepro: qa_compile {\"source\":\"struct S{}\"}"
)

func TestCorrections(t *testing.T) {
	e := MustEngine(t, Config{})
	mustAdd(t, e,
		entries(0, fleetAddr, fmt.Sprintf(crashA, 1), fmt.Sprintf(crashB, 1), fmt.Sprintf(crashA, 2)),
		// 3: a stranger tries to mark the real bug a false positive and to
		// resolve the other; both must be ignored.
		entries(3, strangerAddr,
			"qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=0",
			"qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=1"),
	)
	a, b := mustCluster(t, e, 0), mustCluster(t, e, 1)
	r := e.Report(t0)
	if got := rowOf(t, r, a).State; got != fleet.ClusterOpen {
		t.Fatalf("after an untrusted false-positive mark, state %s, want open", got)
	}
	if got := r.Totals.CorrectionsIgnored; got != 2 {
		t.Errorf("ignored corrections %d, want 2", got)
	}
	before := rowOf(t, r, a).Score

	// 5: the operator resolves A; 6: a dangling ref; 7: a ref to a correction.
	mustAdd(t, e, entries(5, operatorAddr,
		"qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=2",
		"qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=99",
		"qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=3"))
	r = e.Report(t0)
	if got := rowOf(t, r, a); got.State != fleet.ClusterResolved || got.Correction == nil || *got.Correction != 5 {
		t.Errorf("after resolution: state %s correction %v, want resolved by 5", got.State, got.Correction)
	}
	if got := r.Totals.CorrectionsInvalid; got != 2 {
		t.Errorf("invalid corrections %d, want 2", got)
	}
	if r.Clusters[len(r.Clusters)-1].ID != a {
		t.Errorf("resolved cluster is not ranked last: %v", ids(r))
	}

	// 8: A reported again after its resolution: a regression, ranked above
	// what it scored before.
	mustAdd(t, e, entries(8, fleetAddr, fmt.Sprintf(crashA, 3)))
	r = e.Report(t0)
	got := rowOf(t, r, a)
	if got.State != fleet.ClusterRegressed {
		t.Fatalf("state after a new report %s, want regressed", got.State)
	}
	old := before * (1 + 0.5*math.Log(3)) / (1 + 0.5*math.Log(2)) // one more run
	if math.Abs(got.Score-1.5*old) > 1e-3 {
		t.Errorf("regressed score %.4f, want 1.5 × %.4f", got.Score, old)
	}
	if r.Clusters[0].ID != a {
		t.Errorf("regressed cluster ranks %d, want 1", got.Rank)
	}

	// 9: B is a duplicate of A (ref=1 of=0); 10: then A is a false positive.
	mustAdd(t, e, entries(9, operatorAddr,
		"qa/v1 source=qa-operator sev=info surface=fleet kind=duplicate-of ref=1 of=0",
		"qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=1"))
	if id := mustCluster(t, e, 1); id != a {
		t.Fatalf("after duplicate-of, entry 1 is in %s, want %s", id, a)
	}
	r = e.Report(t0)
	got = rowOf(t, r, a)
	if got.State != fleet.ClusterFalsePositive || got.Count != 4 || !slices.Equal(got.Merged, []string{b}) {
		t.Errorf("merged row: state %s count %d merged %v, want false-positive, 4, [%s]", got.State, got.Count, got.Merged, b)
	}
	if r.Totals.Clusters != 1 || r.Totals.CorrectionsApplied != 3 {
		t.Errorf("totals %+v, want 1 cluster and 3 applied corrections", r.Totals)
	}
}

func ids(r fleet.Report) []string {
	var out []string
	for _, row := range r.Clusters {
		out = append(out, row.ID)
	}
	return out
}

func TestTrustAndSpam(t *testing.T) {
	e := MustEngine(t, Config{})
	// One real report of a medium bug.
	real := "qa/v1 source=qa-smoke sev=medium surface=call run=r-1\nempty reply to hello\nrepro: qa_call {\"target\":\"qa-r1-1\",\"message\":\"hello\"}"
	mustAdd(t, e, entries(0, fleetAddr, real))
	alone := e.Report(t0).Clusters[0].Score

	// A stranger copies it 200 times as critical under 50 sources and runs,
	// and floods a fake critical chain finding from many addresses.
	var copies, fakes []Entry
	next := uint64(1)
	for i := range 200 {
		text := fmt.Sprintf("qa/v1 source=qa-x%d sev=critical surface=call run=r-fake-%d\nempty reply to hello\nrepro: qa_call {\"target\":\"qa-r9-%d\",\"message\":\"hello\"}", i%50, i, i%9)
		copies = append(copies, entries(next, strangerAddr, text)...)
		next++
	}
	for i := range 200 {
		text := fmt.Sprintf("qa/v1 source=qa-sec sev=critical surface=chain run=r-%d\nowner key leaked, drain imminent\nrepro: qa_chain {\"method\":\"eth_getBalance\",\"params\":{}}", i)
		fakes = append(fakes, entries(next, addrOf(byte(i%7)), text)...)
		next++
	}
	mustAdd(t, e, copies, fakes)
	// A probe stuck in a loop: 300 reports in one run.
	var loop []string
	for i := range 300 {
		loop = append(loop, fmt.Sprintf("qa/v1 source=qa-fuzz sev=low surface=docs run=r-loop\ntypo in skill.md\nrepro: qa_fetch {\"url\":\"https://x.test/skill.md?n=%d\"}", i))
	}
	mustAdd(t, e, entries(next, fleetAddr, loop...))

	r := e.Report(t0)
	first := r.Clusters[0]
	if first.Title != "empty reply to hello" || !first.Trusted {
		t.Fatalf("first row %q trusted=%v, want the real trusted finding first", first.Title, first.Trusted)
	}
	if first.Score != alone || first.Severity != fleet.SeverityMedium || first.Count != 1 || first.Untrusted != 200 {
		t.Errorf("real finding: score %v sev %s count %d untrusted %d; want score %v, medium, 1, 200 (copies shown, not counted)",
			first.Score, first.Severity, first.Count, first.Untrusted, alone)
	}
	loopRow := r.Clusters[1]
	if loopRow.Count != 300 || loopRow.Runs != 1 || len(loopRow.Sources) != 1 {
		t.Errorf("loop: count %d runs %d sources %v, want 300, 1 run, 1 source", loopRow.Count, loopRow.Runs, loopRow.Sources)
	}
	if loopRow.EntriesOmitted != 300-len(loopRow.Entries) || len(loopRow.Entries) != recentEntries+1 {
		t.Errorf("loop entries %v (+%d omitted)", loopRow.Entries, loopRow.EntriesOmitted)
	}
	fake := r.Clusters[2]
	if fake.Trusted || fake.Title != "owner key leaked, drain imminent" || len(fake.Sources) != 7 {
		t.Errorf("third row %q trusted=%v sources %v, want the untrusted flood last with 7 sender sources", fake.Title, fake.Trusted, fake.Sources)
	}
	if got := WorkItems(r); len(got) != 2 || got[0].Title != "empty reply to hello" {
		t.Errorf("work items %+v, want the two trusted findings only", got)
	}
}

func TestRecurrenceDefaults(t *testing.T) {
	e := MustEngine(t, Config{})
	for _, tc := range []struct {
		sources, runs int
		want          float64
	}{
		{1, 1, 1},
		{1, 100, 1 + 0.5*math.Log(100)},
		{1, 5000, 1 + 0.5*math.Log(100)}, // capped
		{3, 3, 1 + math.Log(3) + 0.5*math.Log(3)},
	} {
		if got := e.recurrence(tc.sources, tc.runs); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("recurrence(%d, %d) = %v, want %v", tc.sources, tc.runs, got, tc.want)
		}
	}
}

func TestRankTiesByRecency(t *testing.T) {
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, fleetAddr,
		"qa/v1 source=qa-ux sev=low surface=docs\nfirst docs typo\nrepro: qa_fetch {\"url\":\"https://x.test/a\"}",
		"qa/v1 source=qa-ux sev=low surface=docs\nsecond docs typo\nrepro: qa_fetch {\"url\":\"https://x.test/b\"}",
	))
	r := e.Report(t0)
	if r.Clusters[0].Title != "second docs typo" || r.Clusters[0].Score != r.Clusters[1].Score {
		t.Errorf("equal scores should rank the most recent first: %q then %q", r.Clusters[0].Title, r.Clusters[1].Title)
	}
}

func TestAddOrder(t *testing.T) {
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(5, fleetAddr, "a", "b")) // a log read from index 5 on
	if err := e.Add(entries(6, fleetAddr, "c")); !errors.Is(err, ErrOrder) {
		t.Errorf("re-adding index 6: %v, want ErrOrder", err)
	}
	if err := e.Add(entries(1<<40, fleetAddr, "far")); !errors.Is(err, ErrOrder) {
		t.Errorf("a hole: %v, want ErrOrder", err)
	}
	mustAdd(t, e, entries(7, fleetAddr, "d"))
	if e.Next() != 8 {
		t.Errorf("Next %d, want 8", e.Next())
	}
	if _, ok := e.ClusterOf(4); ok {
		t.Error("an index before the first has a cluster")
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := Config{MergeThreshold: -1, Top: -2, Weights: Weights{
		Severity: map[fleet.Severity]float64{"urgent": 1, fleet.SeverityHigh: math.NaN()},
		RunCap:   -1,
	}}
	err := cfg.Validate()
	for _, want := range []string{"merge_threshold", "top", "weights.severity.urgent", "weights.severity.high", "weights.run_cap"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
	w := Weights{Severity: map[fleet.Severity]float64{fleet.SeverityCritical: 100}}.WithDefaults()
	if w.Severity[fleet.SeverityCritical] != 100 || w.Severity[fleet.SeverityHigh] != 8 || w.RunCap != 100 {
		t.Errorf("WithDefaults kept %v, want critical overridden and the rest default", w.Severity)
	}
}

// TestCorrectionByClusterID checks ref= may name a cluster by its id (the
// fix stage's kind=needs-repro and kind=resolution records), only from a
// trusted sender, only for a cluster that exists when the record is read.
func TestCorrectionByClusterID(t *testing.T) {
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, fleetAddr, fmt.Sprintf(crashA, 1), fmt.Sprintf(crashB, 1)))
	a, b := mustCluster(t, e, 0), mustCluster(t, e, 1)
	// A stranger's resolution by id is ignored; an id no cluster has is invalid.
	mustAdd(t, e, entries(2, strangerAddr, "qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref="+a))
	mustAdd(t, e, entries(3, fleetAddr,
		"qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=00000000deadbeef",
		"qa/v1 source=qa-fixer sev=info surface=compiler kind=needs-repro ref="+b))
	r := e.Report(t0)
	if got := rowOf(t, r, a).State; got != fleet.ClusterOpen {
		t.Fatalf("after an untrusted resolution by id: %s, want open", got)
	}
	if got := rowOf(t, r, b).State; got != fleet.ClusterOpen {
		t.Errorf("needs-repro changed the state of %s to %s", b, got)
	}
	if r.Totals.CorrectionsIgnored != 1 || r.Totals.CorrectionsInvalid != 1 || r.Totals.CorrectionsApplied != 1 {
		t.Errorf("totals %+v, want 1 ignored, 1 invalid, 1 applied", r.Totals)
	}
	mustAdd(t, e, entries(5, fleetAddr, "qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref="+a))
	if got := rowOf(t, e.Report(t0), a); got.State != fleet.ClusterResolved || got.Correction == nil || *got.Correction != 5 {
		t.Errorf("after resolution by id: %s by %v, want resolved by 5", got.State, got.Correction)
	}
	// An id that only appears later cannot be resolved in advance.
	later := MustEngine(t, Config{})
	c := fleet.Fingerprint(mustParse(t, fmt.Sprintf(crashA, 1)))
	mustAdd(t, later, entries(0, fleetAddr, "qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref="+c, fmt.Sprintf(crashA, 1)))
	if got := later.Report(t0); got.Clusters[0].State != fleet.ClusterOpen || got.Totals.CorrectionsInvalid != 1 {
		t.Errorf("a resolution before its cluster existed applied: %+v", got.Totals)
	}
}

func mustParse(t *testing.T, text string) fleet.Finding {
	t.Helper()
	f, err := fleet.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
