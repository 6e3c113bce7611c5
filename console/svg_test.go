package console

import (
	"testing"

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
