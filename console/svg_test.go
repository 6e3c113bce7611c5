package console

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

func TestSample(t *testing.T) {
	tests := []struct {
		total, n int
		want     []int
	}{
		{3, 5, []int{0, 1, 2}},
		{10, 4, []int{0, 3, 6, 9}},
		{0, 4, []int{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, sample(tt.total, tt.n)); diff != "" {
			t.Errorf("sample(%d, %d): %s", tt.total, tt.n, diff)
		}
	}
}

func TestSparkline(t *testing.T) {
	if sparkline([]int{-1, -1}) != nil {
		t.Error("a sparkline of nothing")
	}
	s := sparkline([]int{1, 2, -1, 5})
	if len(s.Lines) != 1 || len(s.Dots) != 1 || s.Growth != 4 {
		t.Errorf("%+v", s)
	}
	long := make([]int, 500)
	for i := range long {
		long[i] = i
	}
	if s := sparkline(long); len(s.Lines) != 1 || s.Growth != 499 || s.Title != "0 → 499 occurrences over 500 reports" {
		t.Errorf("long: %+v", s.Title)
	}
}

func TestTrendChart(t *testing.T) {
	h := &History{Points: []TrendPoint{
		{Open: map[fleet.Severity]int{fleet.SeverityHigh: 2}, Active: 2},
		{Open: map[fleet.Severity]int{fleet.SeverityHigh: 1, fleet.SeverityLow: 1}, Active: 5},
	}}
	c := trendChart(h)
	var classes []string
	for _, b := range c.Bands {
		classes = append(classes, b.Class)
	}
	if diff := cmp.Diff([]string{"sev-high", "sev-low", "sev-beyond"}, classes); diff != "" {
		t.Errorf("bands: %s", diff)
	}
	if c.Max != 5 || len(c.Latest) != 3 || c.Latest[2].N != 3 {
		t.Errorf("chart %+v", c)
	}
	if trendChart(&History{}) != nil {
		t.Error("a chart of no reports")
	}
}

func TestFuzzPlot(t *testing.T) {
	if fuzzPlot(nil, "edges") != nil {
		t.Error("a plot of nothing")
	}
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	one := fuzzPlot([]FuzzPoint{{Time: t0, Coverage: 5}}, "edges")
	if len(one.Dots) != 1 || len(one.Lines) != 0 {
		t.Errorf("one session: %+v", one)
	}
	pts := []FuzzPoint{{t0, 10}, {t0.Add(time.Minute), 40}, {t0.Add(time.Hour), 40}}
	p := fuzzPlot(pts, "edges")
	// x by time: the second session sits near the left, the third at the right edge.
	if len(p.Lines) != 1 || p.Lines[0] != "1.0,23.5 3.6,1.0 159.0,1.0" || p.Growth != 30 {
		t.Errorf("plot: %+v", p)
	}
	if p.Title != "edges 10 → 40 over 3 sessions, 1h" {
		t.Errorf("title %q", p.Title)
	}
}
