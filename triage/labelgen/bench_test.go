package labelgen_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triage/labelgen"
)

// The benchmarks of package triage live here: they need the workload
// generator, and the import rule lets a subpackage import its parent, not
// the reverse.

// millionOptions generate the benchmarks' log.
var millionOptions = labelgen.Options{Seed: 42, Days: 365, RunsPerDay: 24, Findings: 1_000_000, Bugs: 5000, SpamBursts: 40, Quiet: true}

var (
	millionOnce sync.Once
	million     []triage.Entry
	millionLog  *labelgen.Log
)

// millionEntries is a realistic one-million-entry log: 5,000 bugs across
// seven surfaces reported by five probes every hour for a year, with spam
// bursts and human noise; texts average ~200 bytes.
func millionEntries(tb testing.TB) []triage.Entry {
	tb.Helper()
	millionOnce.Do(func() {
		millionLog = labelgen.Generate(millionOptions)
		million = millionLog.TriageEntries()
		millionLog.Entries = nil
	})
	return million
}

func textBytes(es []triage.Entry) int {
	n := 0
	for _, e := range es {
		n += len(e.Text)
	}
	return n
}

// BenchmarkTriage1M triages one million entries from scratch: Add them all
// to a new Engine and rank them. cpu-s/op is the process's CPU time per
// iteration (GC included), parse-cpu-s the share fleet.Parse alone takes.
func BenchmarkTriage1M(b *testing.B) {
	es := millionEntries(b)
	b.ReportAllocs()
	b.ReportMetric(float64(textBytes(es))/float64(len(es)), "text-bytes/entry")
	c0 := cpuTime()
	for b.Loop() {
		e, err := triage.NewEngine(triage.Config{Trusted: millionLog.Header.Trusted})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Add(es); err != nil {
			b.Fatal(err)
		}
		_ = e.Report(time.Now())
	}
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(es)), "entries")
	b.StopTimer()
	c0 = cpuTime()
	for _, e := range es {
		_, _ = fleet.Parse(e.Text)
	}
	b.ReportMetric((cpuTime() - c0).Seconds(), "parse-cpu-s")
}

// BenchmarkTriage1MMemory reports the heap an Engine holding one million
// entries keeps, per entry, beyond the entries' texts.
func BenchmarkTriage1MMemory(b *testing.B) {
	es := millionEntries(b)
	var e *triage.Engine
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var err error
		e, err = triage.NewEngine(triage.Config{Trusted: millionLog.Header.Trusted})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Add(es); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(es)), "heap-bytes/entry")
	}
	runtime.KeepAlive(e)
}

// BenchmarkTriageIncremental100 adds 100 new entries to an engine holding
// 900,000 and ranks all of it again, as the daemon does after each
// new-entry event.
func BenchmarkTriageIncremental100(b *testing.B) {
	es := millionEntries(b)
	base, fresh := es[:len(es)-100_000], es[len(es)-100_000:]
	e, err := triage.NewEngine(triage.Config{Trusted: millionLog.Header.Trusted})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Add(base); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	next := 0
	for b.Loop() {
		if next+100 > len(fresh) {
			b.Fatal("ran out of fresh entries; lower -benchtime")
		}
		if err := e.Add(fresh[next : next+100]); err != nil {
			b.Fatal(err)
		}
		next += 100
		_ = e.Report(time.Now())
	}
}
