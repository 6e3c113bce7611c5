package triggers

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// tickRecorder is a Starter that records when each Start call arrived and
// signals when a whole tick (n calls) is in.
type tickRecorder struct {
	n    int
	mu   sync.Mutex
	at   []time.Time
	full chan []time.Time
	done <-chan Outcome
}

func newTickRecorder(n int) *tickRecorder {
	return &tickRecorder{n: n, at: make([]time.Time, 0, n), full: make(chan []time.Time, 4), done: finished(Outcome{})}
}

func (r *tickRecorder) Start(context.Context, string, string) (<-chan Outcome, error) {
	now := time.Now()
	r.mu.Lock()
	r.at = append(r.at, now)
	if len(r.at) == r.n {
		r.full <- r.at
		r.at = make([]time.Time, 0, r.n)
	}
	r.mu.Unlock()
	return r.done, nil
}

func thousandSpecs(n int, cronSpec string) []Spec {
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{Specialist: fmt.Sprintf("s%04d", i), Cron: cronSpec}
	}
	return specs
}

// TestThousandEntriesFireTogether: 1,000 entries due at the same instant
// all fire at that instant (in bubble time, where scheduling costs nothing).
func TestThousandEntriesFireTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: thousandSpecs(1000, "*/5 * * * * *"), Starter: f})
		s.Start(t.Context())
		time.Sleep(11 * time.Second)
		synctest.Wait()
		calls := f.Calls("")
		if len(calls) != 2000 {
			t.Fatalf("%d calls, want 2000", len(calls))
		}
		for _, c := range calls {
			if c.At != 5*time.Second && c.At != 10*time.Second {
				t.Fatalf("%s fired at %s", c.Specialist, c.At)
			}
		}
		if st := s.Stats()["s0999"]; st.Fired != 2 {
			t.Errorf("stats %+v", st)
		}
	})
}

// BenchmarkFire1000 measures, in real time, the delay from the scheduled
// instant (a whole second) to each Start call when 1,000 cron entries fire
// together. One op is one tick, so ns/op is about a second and means
// nothing; read the p50/p99/max delay metrics. Run with -benchtime=Nx.
func BenchmarkFire1000(b *testing.B) {
	const n = 1000
	rec := newTickRecorder(n)
	s, err := New(Config{Specs: thousandSpecs(n, "* * * * * *"), Starter: rec, Location: time.UTC})
	if err != nil {
		b.Fatal(err)
	}
	s.Start(b.Context())
	defer s.Stop(context.Background())
	<-rec.full // the first tick follows a start at an arbitrary instant: warm-up
	var delays []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		at := <-rec.full
		due := slices.MinFunc(at, time.Time.Compare).Truncate(time.Second)
		for _, t := range at {
			delays = append(delays, t.Sub(due))
		}
	}
	b.StopTimer()
	slices.Sort(delays)
	q := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(delays[len(delays)-1].Microseconds()), "max-µs")
	b.ReportMetric(float64(delays[0].Microseconds()), "min-µs")
}
