package labelgen_test

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/triage/labelgen"
)

// TestDiagnose prints where a clustering goes wrong on a generated log: the
// predicted clusters that mix the most pairs of distinct bugs, with a
// sample text of each bug mixed in, and the bugs split across the most
// predicted clusters. It is a tool for working on the method, not a check:
//
//	TRIAGE_DIAG=1M go test ./triage/labelgen -run Diagnose -v     # the bench log
//	TRIAGE_DIAG=7 go test ./triage/labelgen -run Diagnose -v      # seed 7, default size
func TestDiagnose(t *testing.T) {
	what := os.Getenv("TRIAGE_DIAG")
	if what == "" {
		t.Skip("set TRIAGE_DIAG=1M or a seed")
	}
	var log *labelgen.Log
	if what == "1M" {
		log = cachedMillion(t)
	} else {
		seed, err := strconv.ParseUint(what, 10, 64)
		if err != nil {
			t.Fatalf("TRIAGE_DIAG=%q: want 1M or a seed", what)
		}
		log = labelgen.Generate(labelgen.Options{Seed: seed})
	}
	e, _ := run(t, log)
	pred := make([]string, len(log.Entries))
	for i, en := range log.Entries {
		pred[i], _ = e.ClusterOf(en.Index)
	}
	logScores(t, what, len(log.Entries), labelgen.Evaluate(log, pred, nil, 10))

	type mix struct {
		id     string
		labels map[string]int
		sample map[string]string
		n      int
	}
	preds := map[string]*mix{}
	splits := map[string]map[string]int{}
	for i, en := range log.Entries {
		if en.Cluster == "" || pred[i] == "" {
			continue
		}
		m := preds[pred[i]]
		if m == nil {
			m = &mix{id: pred[i], labels: map[string]int{}, sample: map[string]string{}}
			preds[pred[i]] = m
		}
		m.labels[en.Cluster]++
		m.n++
		if _, ok := m.sample[en.Cluster]; !ok {
			m.sample[en.Cluster] = en.Text
		}
		if splits[en.Cluster] == nil {
			splits[en.Cluster] = map[string]int{}
		}
		splits[en.Cluster][pred[i]]++
	}
	pairs := func(n int) float64 { return float64(n) * float64(n-1) / 2 }
	wrong := func(m *mix) float64 {
		w := pairs(m.n)
		for _, c := range m.labels {
			w -= pairs(c)
		}
		return w
	}
	var all []*mix
	var total float64
	for _, m := range preds {
		all = append(all, m)
		total += wrong(m)
	}
	slices.SortFunc(all, func(a, b *mix) int { return cmp.Compare(wrong(b), wrong(a)) })
	t.Logf("false pairs: %.0f", total)
	for _, m := range all[:min(15, len(all))] {
		if wrong(m) == 0 {
			break
		}
		var b strings.Builder
		fmt.Fprintf(&b, "cluster %s: %d entries, %.0f false pairs (%.1f%%)\n", m.id, m.n, wrong(m), 100*wrong(m)/total)
		labels := make([]string, 0, len(m.labels))
		for l := range m.labels {
			labels = append(labels, l)
		}
		slices.SortFunc(labels, func(x, y string) int { return cmp.Compare(m.labels[y], m.labels[x]) })
		for _, l := range labels[:min(6, len(labels))] {
			fmt.Fprintf(&b, "    %6d %-10s %q\n", m.labels[l], l, firstLines(m.sample[l]))
		}
		t.Log(b.String())
	}
	type split struct {
		label string
		parts map[string]int
	}
	var ss []split
	for l, p := range splits {
		ss = append(ss, split{l, p})
	}
	missed := func(s split) float64 {
		n := 0
		for _, c := range s.parts {
			n += c
		}
		w := pairs(n)
		for _, c := range s.parts {
			w -= pairs(c)
		}
		return w
	}
	slices.SortFunc(ss, func(a, b split) int { return cmp.Compare(missed(b), missed(a)) })
	samples := map[[2]string]string{}
	for i, en := range log.Entries {
		k := [2]string{en.Cluster, pred[i]}
		if _, ok := samples[k]; !ok && en.Cluster != "" {
			samples[k] = en.Text
		}
	}
	for _, s := range ss[:min(10, len(ss))] {
		var b strings.Builder
		fmt.Fprintf(&b, "bug %s split in %d clusters, %.0f missed pairs\n", s.label, len(s.parts), missed(s))
		parts := make([]string, 0, len(s.parts))
		for p := range s.parts {
			parts = append(parts, p)
		}
		slices.SortFunc(parts, func(x, y string) int { return cmp.Compare(s.parts[y], s.parts[x]) })
		for _, p := range parts[:min(6, len(parts))] {
			fmt.Fprintf(&b, "    %6d of cluster %s (%d entries) %q\n", s.parts[p], p, preds[p].n, firstLines(samples[[2]string{s.label, p}]))
		}
		t.Log(b.String())
	}
}

func firstLines(s string) string {
	lines := strings.SplitN(s, "\n", 3)
	if len(lines) > 2 {
		lines = lines[:2]
	}
	return strings.Join(lines, " | ")
}

// cachedMillion generates the bench log, or reads it from the file named by
// TRIAGE_DIAG_CACHE (writing it there first when missing): generating takes
// a minute.
func cachedMillion(t *testing.T) *labelgen.Log {
	t.Helper()
	path := os.Getenv("TRIAGE_DIAG_CACHE")
	if path == "" {
		return labelgen.Generate(millionOptions)
	}
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		log, err := labelgen.Read(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		return log
	}
	log := labelgen.Generate(millionOptions)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := log.Write(w); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return log
}
