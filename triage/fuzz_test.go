package triage

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/qafleet/fleetd/fleet"
)

// FuzzEngine feeds arbitrary texts from trusted and untrusted senders and
// checks that the engine never panics and its report stays consistent.
func FuzzEngine(f *testing.F) {
	for _, t := range hostile {
		f.Add(t, "qa/v1 source=qa-operator sev=info surface=fleet kind=duplicate-of ref=0 of=1", true)
	}
	f.Add("qa/v1 source=a sev=high surface=b\nx\nrepro: t {\"a\":1}", "qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=0", true)
	f.Add("qa/v1 source=a sev=meta surface=b kind=meta\nx", "qa/v1 source=a sev=low surface=b kind=false-positive ref=99999999999999999999", false)
	f.Add("\xff\xfe", "qa/v1", false)
	f.Add("qa/v1 source=a sev=high surface=b\nx y z\nrepro: t {\"a\":1}", "qa/v1 source=qa-operator sev=info surface=fleet kind=unmerge ref=0", true)
	f.Add("qa/v1 source=a sev=high surface=b state=00aa\nx\nrepro: t {\"a\":1}", "qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=0", true)
	f.Add("qa/v1 source=a sev=high surface=b\nx", "qa/v1 source=qa-operator sev=info surface=fleet kind=accepted-risk ref=0 until=1970-01-01T00:00:01Z\nwhy", true)
	f.Add("qa/v1 source=a sev=high surface=b\nx", "qa/v1 source=qa-fixer sev=meta surface=b kind=cause ref=0 commit=3f2a9c1 date=2026-11-20T10:04:00Z span=3\nbisected\nsubject: \u202e", true)
	f.Add("qa/v1 source=a sev=high surface=b\nx", "qa/v1 source=qa-fixer sev=meta surface=b kind=cause ref=0 since=zz", true)
	f.Fuzz(func(t *testing.T, a, b string, trusted bool) {
		sender := strangerAddr
		if trusted {
			sender = fleetAddr
		}
		es := append(entries(0, sender, a, b, a), entries(3, operatorAddr, b, a)...)
		// Built the way Triage builds it: again when an unmerge splits an
		// entry read before it.
		e, err := BuildEngine(Config{Trusted: []fleet.Address{fleetAddr, operatorAddr}}, func(add func([]Entry) error) error { return add(es) })
		if err != nil {
			t.Fatal(err)
		}
		r := e.Report(time.Unix(0, 0))
		counted := 0
		for i, row := range r.Clusters {
			if row.Rank != i+1 {
				t.Fatalf("row %d has rank %d", i, row.Rank)
			}
			if row.Count < 1 || len(row.Entries) == 0 || len(row.Entries) > recentEntries+1 {
				t.Fatalf("row %+v", row)
			}
			counted += row.Count + row.Untrusted
		}
		if counted != r.Totals.Findings {
			t.Fatalf("rows count %d findings, totals say %d", counted, r.Totals.Findings)
		}
		var md strings.Builder
		if err := RenderMarkdown(&md, r, 0, time.Unix(0, 0)); err != nil || !utf8.ValidString(md.String()) {
			t.Fatalf("markdown: %v", err)
		}
		if strings.ContainsAny(md.String(), "\x1b\x00\u202e") {
			t.Fatal("markdown holds control characters")
		}
	})
}

func FuzzNormalize(f *testing.F) {
	f.Add("qa-r123-4 0x5c1e0a9d3b7f2a10 850ms enum E{} 0x8f1c2a3b")
	f.Add("out of date, p95 latency of POST /call: 1421 ms")
	f.Add("\xff\x00é1ü2")
	f.Fuzz(func(t *testing.T, s string) {
		once := appendLiterals(nil, s)
		if twice := appendLiterals(nil, string(once)); string(twice) != string(once) {
			t.Fatalf("appendLiterals is not idempotent: %q -> %q -> %q", s, once, twice)
		}
		seq := tokenize(nil, s)
		set := tokenSet(nil, seq)
		for i := 1; i < len(set); i++ {
			if set[i-1] >= set[i] {
				t.Fatal("token set is not sorted and unique")
			}
		}
		_ = substitution(seq, tokenize(nil, s+" x"), func(uint64) float64 { return 1 })
	})
}
