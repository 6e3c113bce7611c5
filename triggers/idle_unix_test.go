//go:build unix

package triggers

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// idleSpecs are 100 specialists of which none is due within a few seconds:
// 60 cron, 30 every, 10 chain-event subscribers.
func idleSpecs() []Spec {
	var specs []Spec
	for i := range 60 {
		specs = append(specs, Spec{Specialist: fmt.Sprintf("cron%02d", i), Cron: fmt.Sprintf("0 %d */6 * * *", i)})
	}
	for i := range 30 {
		specs = append(specs, Spec{Specialist: fmt.Sprintf("every%02d", i), Every: time.Duration(i+1) * time.Hour})
	}
	for i := range 10 {
		specs = append(specs, Spec{Specialist: fmt.Sprintf("event%02d", i), Events: []string{EventNameRegistered, EventFeedback}})
	}
	return specs
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdle100 holds 100 scheduled specialists (polling a fake chain
// every 2 s) idle for 3 s per op and reports the scheduler's own footprint:
// goroutines, allocations and CPU per second of idling, and the heap it
// holds. Process CPU/RSS of the real daemon is measured outside.
func BenchmarkIdle100(b *testing.B) {
	const window = 3 * time.Second
	runtime.GC()
	g0 := runtime.NumGoroutine()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	src := newFakeChain()
	s, err := New(Config{Specs: idleSpecs(), Starter: newFakeStarter(), Events: src, Registry: registryAddr, FeedbackLog: logAddr, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	s.Start(b.Context())
	defer s.Stop(context.Background())
	time.Sleep(100 * time.Millisecond) // first poll done
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	goroutines := runtime.NumGoroutine() - g0
	var allocs, bytes uint64
	var cpu, wall time.Duration
	for b.Loop() {
		var a, z runtime.MemStats
		runtime.ReadMemStats(&a)
		c0, t0 := cpuTime(), time.Now()
		time.Sleep(window)
		c1, t1 := cpuTime(), time.Now()
		runtime.ReadMemStats(&z)
		allocs += z.Mallocs - a.Mallocs
		bytes += z.TotalAlloc - a.TotalAlloc
		cpu += c1 - c0
		wall += t1.Sub(t0)
	}
	b.StopTimer()
	sec := wall.Seconds()
	b.ReportMetric(float64(goroutines), "goroutines")
	b.ReportMetric(float64(allocs)/sec, "allocs/s")
	b.ReportMetric(float64(bytes)/sec, "B-alloc/s")
	b.ReportMetric(float64(cpu.Microseconds())/sec/1000, "cpu-ms/s")
	b.ReportMetric(float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/1024, "heap-KiB")
	b.ReportMetric(float64(src.Calls("BlockNumber"))/wall.Seconds(), "polls/s")
}
