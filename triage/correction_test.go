package triage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/qafleet/fleetd/fleet"
)

// Two reports that read alike (similarity merges them) but are two bugs:
// the stale owner after a transfer, and the stale owner after an expiry.
const (
	staleTransfer = "qa/v1 source=qa-registry sev=high surface=registry run=r-%d\nregistry lookup returns the stale owner of a name after its transfer"
	staleExpiry   = "qa/v1 source=qa-registry sev=high surface=registry run=r-%d\nregistry lookup returns the stale owner of a name after its transfer once the name has expired"
)

func op(header, reason string) string {
	s := "qa/v1 source=qa-operator sev=info surface=fleet " + header
	if reason != "" {
		s += "\n" + reason
	}
	return s
}

// syncedTriages feeds the chain's texts to a Triage in steps (syncing after
// each), and returns its report, the report of a fresh Triage synced once
// from the whole chain (a store rebuilt from the chain), and the first
// one's after it is reopened (the engine rebuilt from its store).
func syncedTriages(t *testing.T, now time.Time, steps ...[]string) (inc, fresh, reopened fleet.Report) {
	t.Helper()
	ctx := t.Context()
	c := newFakeChain()
	dir := t.TempDir()
	a := MustOpen(t, dir, Config{})
	for _, texts := range steps {
		for _, text := range texts {
			sender := fleetAddr
			if strings.Contains(text, "source=qa-operator") {
				sender = operatorAddr
			}
			c.Append(sender, text)
		}
		if _, err := a.Sync(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	inc = a.Report(now)
	b := MustOpen(t, t.TempDir(), Config{})
	if _, err := b.Sync(ctx, c); err != nil {
		t.Fatal(err)
	}
	fresh = b.Report(now)
	a.Close()
	reopened = MustOpen(t, dir, Config{}).Report(now)
	return inc, fresh, reopened
}

func sameReports(t *testing.T, want fleet.Report, others ...fleet.Report) {
	t.Helper()
	for i, got := range others {
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("report %d differs from the incremental one (-want +got):\n%s", i+1, d)
		}
	}
}

func TestUnmergeEntry(t *testing.T) {
	// 0 and 1 read alike and are merged; 2 is 1's bug again.
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, fleetAddr, fmt.Sprintf(staleTransfer, 1), fmt.Sprintf(staleExpiry, 2), fmt.Sprintf(staleExpiry, 3)))
	if a, b := mustCluster(t, e, 0), mustCluster(t, e, 1); a != b {
		t.Fatalf("the two wordings are not merged (%s, %s): the test needs them to be", a, b)
	}
	a := mustCluster(t, e, 0)

	// Bad requests are refused before anything is posted.
	for _, tc := range []struct {
		c    Correction
		want error
	}{
		{Correction{Kind: fleet.KindUnmerge, Ref: 9}, ErrNoSuchRef},
		{Correction{Kind: fleet.KindUnmerge, Ref: 0}, ErrNotMerged}, // the cluster's first finding
		{Correction{Kind: fleet.KindUnmerge, Cluster: a}, ErrNotMerged},
		{Correction{Kind: fleet.KindUnmerge, Cluster: "0123456789abcdef"}, ErrNoSuchRef},
	} {
		if err := e.CheckCorrection(tc.c); !errors.Is(err, tc.want) {
			t.Errorf("CheckCorrection(%+v) = %v, want %v", tc.c, err, tc.want)
		}
	}
	if err := e.CheckCorrection(Correction{Kind: fleet.KindUnmerge, Ref: 1}); err != nil {
		t.Fatalf("unmerge entry 1: %v", err)
	}

	// 3: the operator splits entry 1 out; 4: its bug is reported again;
	// 5: a false positive of the first cluster, written naming entry 0.
	steps := [][]string{
		{fmt.Sprintf(staleTransfer, 1), fmt.Sprintf(staleExpiry, 2), fmt.Sprintf(staleExpiry, 3)},
		{op("kind=unmerge ref=1", "the expiry path is another bug")},
		{fmt.Sprintf(staleExpiry, 4), op("kind=false-positive ref=0", "")},
	}
	inc, fresh, reopened := syncedTriages(t, t0.Add(time.Hour), steps...)
	sameReports(t, inc, fresh, reopened)
	if inc.Totals.Clusters != 2 {
		t.Fatalf("%d clusters after the unmerge, want 2: %v", inc.Totals.Clusters, ids(inc))
	}
	first := rowOf(t, inc, a)
	if first.Count != 1 || first.State != fleet.ClusterFalsePositive {
		t.Errorf("the first cluster: count %d state %s, want 1 and false-positive", first.Count, first.State)
	}
	var split fleet.Cluster
	for _, row := range inc.Clusters {
		if row.ID != a {
			split = row
		}
	}
	if split.Count != 3 || split.State != fleet.ClusterOpen || !strings.Contains(split.Title, "expired") {
		t.Errorf("the split cluster: %q count %d state %s, want the expiry bug's three reports, open", split.Title, split.Count, split.State)
	}
	if len(split.Corrections) != 1 || split.Corrections[0].Kind != fleet.KindUnmerge || split.Corrections[0].Of != a ||
		split.Corrections[0].Reason != "the expiry path is another bug" {
		t.Errorf("the split cluster's history: %+v", split.Corrections)
	}
	if len(first.Corrections) != 2 || first.Corrections[0].Kind != fleet.KindUnmerge || first.Corrections[1].Kind != fleet.KindFalsePositive {
		t.Errorf("the first cluster's history: %+v, want the unmerge then the false positive", first.Corrections)
	}
	if inc.Totals.CorrectionsApplied != 2 || inc.Totals.CorrectionsInvalid != 0 {
		t.Errorf("totals %+v", inc.Totals)
	}

	// The same log in one piece, through BuildEngine, agrees; a second
	// unmerge of the entry is refused (and ignored when posted anyway).
	all := append(entries(0, fleetAddr, steps[0]...), entries(3, operatorAddr, steps[1]...)...)
	all = append(all, entries(4, fleetAddr, steps[2][0])...)
	all = append(all, entries(5, operatorAddr, steps[2][1], op("kind=unmerge ref=1", ""))...)
	loads := 0
	e2, err := BuildEngine(Config{Trusted: fleetTrusted()}, func(add func([]Entry) error) error { loads++; return add(all) })
	if err != nil {
		t.Fatal(err)
	}
	if loads != 2 {
		t.Errorf("the log was read %d times, want 2: once to learn the split, once to apply it", loads)
	}
	loads = 0
	if _, err := buildEngine(Config{Trusted: fleetTrusted()}, func(add func([]Entry) error) error { loads++; return add(all) }, e2.Splits()); err != nil || loads != 1 {
		t.Errorf("with the splits known the log was read %d times (%v), want once", loads, err)
	}
	if err := e2.CheckCorrection(Correction{Kind: fleet.KindUnmerge, Ref: 1}); !errors.Is(err, ErrAlreadySplit) {
		t.Errorf("a second unmerge of entry 1: %v, want ErrAlreadySplit", err)
	}
	r2 := e2.Report(t0.Add(time.Hour))
	if r2.Totals.CorrectionsInvalid != 1 || r2.Totals.Clusters != 2 {
		t.Errorf("with the second unmerge posted: totals %+v, want 1 invalid correction and 2 clusters", r2.Totals)
	}
}

func TestUnmergePlace(t *testing.T) {
	steps := [][]string{
		{agentLeak("alice"), agentLeak("bobby"), agentLeak("carol")},
	}
	inc, _, _ := syncedTriages(t, t0, steps...)
	if len(inc.Clusters) != 1 || len(inc.Clusters[0].Places) != 3 {
		t.Fatalf("want one folded row of three places, got %d rows", len(inc.Clusters))
	}
	bobby := inc.Clusters[0].Places[1]
	if bobby.Place != "bobby" {
		t.Fatalf("places %+v", inc.Clusters[0].Places)
	}
	steps = append(steps, []string{op("kind=unmerge ref="+bobby.Cluster, "bobby's agent is a honeypot")}, []string{agentLeak("bobby")})
	inc, fresh, reopened := syncedTriages(t, t0, steps...)
	sameReports(t, inc, fresh, reopened)
	if len(inc.Clusters) != 2 {
		t.Fatalf("%d rows after unmerging a place, want 2", len(inc.Clusters))
	}
	row := rowOf(t, inc, bobby.Cluster)
	if len(row.Places) != 0 || row.Count != 2 || len(row.Corrections) != 1 || row.Corrections[0].Kind != fleet.KindUnmerge {
		t.Errorf("bobby's row: places %v count %d history %+v", row.Places, row.Count, row.Corrections)
	}
	if got := len(rowOf(t, inc, inc.Clusters[0].ID).Places) + len(rowOf(t, inc, inc.Clusters[1].ID).Places); got != 2 {
		t.Errorf("the folded row lists %d places, want alice and carol", got)
	}
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, fleetAddr, steps[0]...))
	// Entry 2 is carol's only finding: unmerging it is refused, pointing
	// at the place's unmerge.
	if err := e.CheckCorrection(Correction{Kind: fleet.KindUnmerge, Ref: 2}); !errors.Is(err, ErrNotMerged) || !strings.Contains(err.Error(), "unmerge cluster") {
		t.Errorf("unmerging a place's only entry: %v, want ErrNotMerged with a hint", err)
	}
	mustAdd(t, e, entries(3, operatorAddr, steps[1]...))
	if err := e.CheckCorrection(Correction{Kind: fleet.KindUnmerge, Cluster: bobby.Cluster}); !errors.Is(err, ErrAlreadySplit) {
		t.Errorf("unmerging the place again: %v, want ErrAlreadySplit", err)
	}
}

func TestAcceptedRisk(t *testing.T) {
	until := t0.Add(3 * time.Hour)
	steps := [][]string{
		{fmt.Sprintf(crashA, 1), fmt.Sprintf(crashB, 1)},
		{op("kind=accepted-risk ref=0 until="+until.Format(time.RFC3339), "only reachable from the admin network")},
		{fmt.Sprintf(crashA, 2)}, // reported again: still accepted
	}
	for _, tc := range []struct {
		now    time.Time
		state  fleet.ClusterState
		reason string
	}{
		{t0.Add(time.Hour), fleet.ClusterAcceptedRisk, "only reachable from the admin network"},
		{until, fleet.ClusterOpen, "expired at " + until.Format(time.RFC3339)},
	} {
		inc, fresh, reopened := syncedTriages(t, tc.now, steps...)
		sameReports(t, inc, fresh, reopened)
		e := MustEngine(t, Config{})
		mustAdd(t, e, entries(0, fleetAddr, steps[0]...))
		a := mustCluster(t, e, 0)
		row := rowOf(t, inc, a)
		if row.State != tc.state || !strings.Contains(row.StateReason, tc.reason) || row.Count != 2 {
			t.Errorf("at %s: state %s (%q) count %d, want %s (%q) and 2", tc.now, row.State, row.StateReason, row.Count, tc.state, tc.reason)
		}
		if len(row.Corrections) != 1 || row.Corrections[0].Until == nil || !row.Corrections[0].Until.Equal(until) {
			t.Errorf("history %+v, want the acceptance until %s", row.Corrections, until)
		}
		var md strings.Builder
		if err := RenderMarkdown(&md, inc, 0, tc.now); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(md.String(), "## Corrections") || !strings.Contains(md.String(), "accepted-risk of `0` until "+until.Format(time.RFC3339)+": only reachable from the admin network") {
			t.Errorf("the Markdown report does not show the history:\n%s", md.String())
		}
		if tc.state == fleet.ClusterAcceptedRisk {
			if inc.Clusters[0].ID == a || inc.Totals.AcceptedRisk != 1 {
				t.Errorf("an accepted risk ranks first or is not counted: %v %+v", ids(inc), inc.Totals)
			}
		} else if inc.Clusters[0].ID != a || inc.Totals.AcceptedRisk != 0 {
			t.Errorf("an expired risk does not rank among the open ones: %v", ids(inc))
		}
	}
}

// crash is a compiler crash with a crash state and a repro.
func crash(run int, state, source string) string {
	return fmt.Sprintf("qa/v1 source=qa-fuzz sev=high surface=compiler run=r-%d state=%s\ncompile panic in the type checker\nrepro: qa_compile {\"source\":%q}", run, state, source)
}

func TestFalsePositiveRegresses(t *testing.T) {
	t.Run("new crash state", func(t *testing.T) {
		steps := [][]string{
			{crash(1, "5c1e0a9d3b7f2a10", "enum E{}")},
			{op("kind=false-positive ref=0", "the fuzzer's own harness")},
			{crash(2, "5c1e0a9d3b7f2a10", "enum E{}"), crash(3, "5c1e0a9d3b7f2a10", "enum  E{}")}, // the same state: stays dismissed
		}
		inc, _, _ := syncedTriages(t, t0, steps...)
		if len(inc.Clusters) != 1 || inc.Clusters[0].State != fleet.ClusterFalsePositive || inc.Clusters[0].Count != 3 {
			t.Fatalf("the same crash again: %d rows, first %s count %d, want one false positive of 3", len(inc.Clusters), inc.Clusters[0].State, inc.Clusters[0].Count)
		}
		steps = append(steps, []string{crash(4, "77aa00bb11cc22dd", "enum E{}")})
		inc, fresh, reopened := syncedTriages(t, t0, steps...)
		sameReports(t, inc, fresh, reopened)
		if len(inc.Clusters) != 1 {
			t.Fatalf("%d rows, want the false positive regressed", len(inc.Clusters))
		}
		row := inc.Clusters[0]
		if row.State != fleet.ClusterRegressed || !strings.Contains(row.StateReason, "77aa00bb11cc22dd") || !strings.Contains(row.StateReason, "entry 4") {
			t.Errorf("state %s (%q), want regressed naming the new state and its entry", row.State, row.StateReason)
		}
	})
	t.Run("a materially different repro", func(t *testing.T) {
		const panicOn = "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-%d\ncompile panic in the type checker on a recursive type\nrepro: qa_compile {\"source\":%q}"
		steps := [][]string{
			{fmt.Sprintf(panicOn, 1, "type T = T"), fmt.Sprintf(panicOn, 2, "type T = T")},
			{op("kind=false-positive ref=0", "the harness's own recursion limit")},
			{fmt.Sprintf(panicOn, 3, "type  T  =  T")}, // the same repro, other spacing: stays dismissed
		}
		inc, _, _ := syncedTriages(t, t0, steps...)
		if len(inc.Clusters) != 1 || inc.Clusters[0].State != fleet.ClusterFalsePositive || inc.Clusters[0].Count != 3 {
			t.Fatalf("the same repro again: %d rows, %s, count %d", len(inc.Clusters), inc.Clusters[0].State, inc.Clusters[0].Count)
		}
		steps = append(steps, []string{fmt.Sprintf(panicOn, 4, "struct S { s: Option<S> }")})
		inc, fresh, reopened := syncedTriages(t, t0, steps...)
		sameReports(t, inc, fresh, reopened)
		if len(inc.Clusters) != 1 || inc.Clusters[0].State != fleet.ClusterRegressed || !strings.Contains(inc.Clusters[0].StateReason, "a repro (entry 4) unlike the one marked a false positive at entry 2") {
			t.Errorf("%d rows, first %s (%q), want the false positive regressed by the other repro", len(inc.Clusters), inc.Clusters[0].State, inc.Clusters[0].StateReason)
		}
		// Not dismissed, the same words with another repro are another
		// bug, as ever.
		e := MustEngine(t, Config{})
		mustAdd(t, e, entries(0, fleetAddr, fmt.Sprintf(panicOn, 1, "type T = T"), fmt.Sprintf(panicOn, 4, "struct S { s: Option<S> }")))
		if r := e.Report(t0); len(r.Clusters) != 2 {
			t.Errorf("an open cluster took another repro: %d rows", len(r.Clusters))
		}
	})
	t.Run("a repro where there was none", func(t *testing.T) {
		const word = "qa/v1 source=qa-ux sev=medium surface=face run=r-%d\nthe publish button of the face stays disabled after a valid form is filled in%s"
		steps := [][]string{
			{fmt.Sprintf(word, 1, ""), fmt.Sprintf(word, 2, "")},
			{op("kind=false-positive ref=1", "")},
			{fmt.Sprintf(word, 3, "")},
		}
		inc, _, _ := syncedTriages(t, t0, steps...)
		if inc.Clusters[0].State != fleet.ClusterFalsePositive {
			t.Fatalf("reported again in words: %s, want false-positive", inc.Clusters[0].State)
		}
		steps = append(steps, []string{fmt.Sprintf(word, 4, "\nrepro: qa_fetch {\"url\":\"http://127.0.0.1:8080/publish\"}")})
		inc, fresh, reopened := syncedTriages(t, t0, steps...)
		sameReports(t, inc, fresh, reopened)
		if len(inc.Clusters) != 1 || inc.Clusters[0].State != fleet.ClusterRegressed || !strings.Contains(inc.Clusters[0].StateReason, "a repro (entry 4)") {
			t.Errorf("%d rows, first %s (%q), want the false positive regressed by the repro", len(inc.Clusters), inc.Clusters[0].State, inc.Clusters[0].StateReason)
		}
	})
}

// FuzzParseCorrection: correction records are written by anyone. Whatever
// the text, ParseCorrection must not panic, must accept only what it
// documents, and what it accepts must format back to a record it reads the
// same.
func FuzzParseCorrection(f *testing.F) {
	for _, s := range []string{
		op("kind=false-positive ref=12", ""),
		op("kind=resolution ref=5c1e0a9d2b3f4a10", ""),
		op("kind=duplicate-of ref=12 of=7", ""),
		op("kind=duplicate-of ref=12 of=5c1e0a9d2b3f4a10", ""),
		op("kind=needs-repro ref=3", ""),
		op("kind=unmerge ref=12", "wrongly merged"),
		op("kind=unmerge ref=5c1e0a9d2b3f4a10", ""),
		op("kind=accepted-risk ref=12 until=2027-01-31T00:00:00Z", "admin network only"),
		op("kind=accepted-risk ref=12", ""),
		op("kind=accepted-risk ref=12 until=tomorrow", "x"),
		op("kind=unmerge ref=-1", ""),
		op("kind=unmerge ref=99999999999999999999", ""),
		op("kind=false-positive ref=1 until=2027-01-31T00:00:00Z", ""),
		op("kind=unmerge ref=5C1E0A9D2B3F4A10", ""),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fd, err := fleet.Parse(text)
		if err != nil || fd.FreeForm {
			return
		}
		c, err := ParseCorrection(&fd)
		if err != nil {
			if !errors.Is(err, ErrBadCorrection) {
				t.Fatalf("error %v does not wrap ErrBadCorrection", err)
			}
			return
		}
		if !IsCorrection(c.Kind) {
			t.Fatalf("accepted kind %q", c.Kind)
		}
		if c.Cluster != "" && !isClusterID(c.Cluster) {
			t.Fatalf("accepted cluster %q", c.Cluster)
		}
		if c.Kind == fleet.KindAcceptedRisk && strings.TrimSpace(c.Note) == "" {
			t.Fatal("accepted an accepted-risk without a reason")
		}
		if !c.Until.IsZero() && c.Kind != fleet.KindAcceptedRisk {
			t.Fatalf("accepted until= on %s", c.Kind)
		}
		if c.Kind == fleet.KindDuplicateOf || c.Validate() != nil || len(c.Note) > maxNote {
			return // of= may be a cluster id, which Correction does not format
		}
		c.Until = c.Until.Truncate(time.Second)
		back, err := c.Format()
		if err != nil {
			t.Fatalf("format %+v: %v", c, err)
		}
		fd2, err := fleet.Parse(back)
		if err != nil {
			t.Fatalf("parse %q: %v", back, err)
		}
		c2, err := ParseCorrection(&fd2)
		if err != nil {
			t.Fatalf("read back %q: %v", back, err)
		}
		if c2.Kind != c.Kind || c2.Ref != c.Ref || c2.Cluster != c.Cluster || !c2.Until.Equal(c.Until) {
			t.Fatalf("round trip %+v -> %q -> %+v", c, back, c2)
		}
	})
}

// TestRunRewritesAtExpiry: nothing new on the log, but an accepted risk
// expired: the next Run rewrites the report files with the row open.
func TestRunRewritesAtExpiry(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	c := newFakeChain()
	until := t0.Add(5 * time.Hour)
	c.Append(fleetAddr, fmt.Sprintf(crashA, 1))
	c.Append(operatorAddr, op("kind=accepted-risk ref=0 until="+until.Format(time.RFC3339), "admin only"))
	tr := MustOpen(t, dir, Config{})
	out, err := tr.Run(ctx, c, nil, t0.Add(time.Hour))
	if err != nil || !out.Wrote || out.Report.Clusters[0].State != fleet.ClusterAcceptedRisk {
		t.Fatalf("first run: wrote %v err %v", out.Wrote, err)
	}
	if got := NextExpiry(out.Report); !got.Equal(until) {
		t.Errorf("NextExpiry %s, want %s", got, until)
	}
	if out, err = tr.Run(ctx, c, nil, t0.Add(2*time.Hour)); err != nil || out.Wrote {
		t.Errorf("before the expiry: wrote %v err %v, want no write", out.Wrote, err)
	}
	out, err = tr.Run(ctx, c, nil, until)
	if err != nil || !out.Wrote {
		t.Fatalf("at the expiry: wrote %v err %v, want the files rewritten", out.Wrote, err)
	}
	r, err := LoadReport(filepath.Join(dir, ReportsDir))
	if err != nil {
		t.Fatal(err)
	}
	if r.Clusters[0].State != fleet.ClusterOpen || !strings.Contains(r.Clusters[0].StateReason, "expired") {
		t.Errorf("the written report: %s %q, want open, expired", r.Clusters[0].State, r.Clusters[0].StateReason)
	}
	if out, err = tr.Run(ctx, c, nil, until.Add(time.Hour)); err != nil || out.Wrote {
		t.Errorf("after the expiry: wrote %v err %v, want no write", out.Wrote, err)
	}
}

// TestUntrustedCorrectionsIgnored: anyone may write an unmerge or an
// accepted risk; only trusted senders' change anything.
func TestUntrustedCorrectionsIgnored(t *testing.T) {
	e, err := BuildEngine(Config{Trusted: fleetTrusted()}, func(add func([]Entry) error) error {
		if err := add(entries(0, fleetAddr, fmt.Sprintf(staleTransfer, 1), fmt.Sprintf(staleExpiry, 2))); err != nil {
			return err
		}
		return add(entries(2, strangerAddr,
			op("kind=unmerge ref=1", "not the same bug, trust me"),
			op("kind=accepted-risk ref=0", "nothing to see")))
	})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Report(t0)
	if len(r.Clusters) != 1 || r.Clusters[0].State != fleet.ClusterOpen || len(r.Clusters[0].Corrections) != 0 || r.Totals.CorrectionsIgnored != 2 {
		t.Errorf("after a stranger's corrections: %d rows, state %s, history %v, totals %+v", len(r.Clusters), r.Clusters[0].State, r.Clusters[0].Corrections, r.Totals)
	}
}

// TestCauseRecords: the fix stage's kind=cause records put the first bad
// commit on the cluster they name (by id or by an entry), the latest
// valid one winning; an untrusted sender's is ignored, a malformed one or
// one naming no earlier finding is counted invalid; and every way of
// building the report from the log agrees.
func TestCauseRecords(t *testing.T) {
	crash := "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-%d\ncompile panic on enum E {} with no variants\nrepro: qa_compile {\"source\":\"enum E {}\"}"
	other := "qa/v1 source=qa-ux sev=low surface=console run=r-1\nthe report page has no title"
	e := MustEngine(t, Config{})
	mustAdd(t, e, entries(0, fleetAddr, fmt.Sprintf(crash, 1), other))
	id := mustCluster(t, e, 0)
	cause := func(ref, header, subject string) string {
		s := "qa/v1 source=qa-fixer sev=meta surface=compiler kind=cause ref=" + ref + " " + header + "\nbisected."
		if subject != "" {
			s += "\nsubject: " + subject
		}
		return s
	}
	const culprit = "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49"
	texts := []string{
		cause(id, "since=9b0c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c span=64", ""),                     // 2: replaced by 3
		cause(id, "commit="+culprit+" date=2026-11-20T10:04:00Z span=12", "simplify enum lowering"), // 3: applies
		cause("0", "commit=zzz", "bad hash"),                                                        // 4: invalid
		cause("99", "commit="+culprit, "no such entry"),                                             // 5: invalid (not earlier)
	}
	mustAdd(t, e, entries(2, fleetAddr, texts...))
	// 6: a stranger's record naming another commit is ignored.
	mustAdd(t, e, entries(6, strangerAddr, cause(id, "commit=deadbeefdeadbeef", "stranger")))
	r := e.Report(t0.Add(time.Hour))
	var row *fleet.Cluster
	for i := range r.Clusters {
		if r.Clusters[i].ID == id {
			row = &r.Clusters[i]
		} else if r.Clusters[i].Cause != nil {
			t.Errorf("cluster %s got a cause: %+v", r.Clusters[i].ID, r.Clusters[i].Cause)
		}
	}
	want := &fleet.Cause{Entry: 3, Commit: culprit, Subject: "simplify enum lowering", Date: time.Date(2026, 11, 20, 10, 4, 0, 0, time.UTC), Span: 12}
	if row == nil || !cmp.Equal(row.Cause, want) {
		t.Fatalf("cause %+v, want %+v", row, want)
	}
	if tt := r.Totals; tt.Causes != 5 || tt.CausesIgnored != 1 || tt.CausesInvalid != 2 || tt.Meta != 0 || tt.Findings != 2 {
		t.Errorf("totals %+v", tt)
	}

	// By entry index, a later record wins; every build agrees.
	later := cause("0", "since=9b0c8d7", "")
	inc, fresh, reopened := syncedTriages(t, t0.Add(time.Hour), []string{fmt.Sprintf(crash, 1), other}, texts, []string{fmt.Sprintf(crash, 2), later})
	sameReports(t, inc, fresh, reopened)
	if c := inc.Clusters[0].Cause; c == nil || c.Since != "9b0c8d7" || c.Commit != "" || c.Entry != 7 {
		t.Errorf("after the later record: %+v", c)
	}

	// Rendered: the Markdown and text reports say it.
	var md, tbl strings.Builder
	if err := RenderMarkdown(&md, r, 10, t0); err != nil {
		t.Fatal(err)
	}
	if err := RenderTable(&tbl, r, 10, t0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Causes") || !strings.Contains(md.String(), "3f2a9c1d0e8b") || !strings.Contains(md.String(), "simplify enum lowering") {
		t.Errorf("markdown lacks the cause:\n%s", md.String())
	}
	if !strings.Contains(tbl.String(), "introduced by 3f2a9c1d0e8b") {
		t.Errorf("table lacks the cause:\n%s", tbl.String())
	}
}
