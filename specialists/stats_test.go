package specialists

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	s := []float64{800, 100, 300, 200, 500, 400, 700, 600}
	for _, tc := range []struct{ q, want float64 }{{50, 400}, {95, 800}, {100, 800}, {1, 100}, {12.5, 100}, {12.6, 200}} {
		if got := Percentile(s, tc.q); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.q, got, tc.want)
		}
	}
	if Percentile(nil, 95) != 0 {
		t.Error("empty")
	}
	if s[0] != 800 {
		t.Error("Percentile sorted its input")
	}
}

func TestFitExponent(t *testing.T) {
	xs := []float64{1000, 2000, 4000, 8000, 16000}
	gen := func(f func(x float64) float64) []float64 {
		var ys []float64
		for _, x := range xs {
			ys = append(ys, f(x))
		}
		return ys
	}
	for _, tc := range []struct {
		name string
		ys   []float64
		want float64
	}{
		{"linear", gen(func(x float64) float64 { return 0.01 * x }), 1},
		{"quadratic", gen(func(x float64) float64 { return 1e-6 * x * x }), 2},
		{"n log n", gen(func(x float64) float64 { return x * math.Log(x) / 1000 }), 1.12},
		{"flat", gen(func(float64) float64 { return 7 }), 0},
	} {
		k, r2, ok := FitExponent(xs, tc.ys)
		if !ok || math.Abs(k-tc.want) > 0.02 || r2 < 0.9 && tc.name != "flat" {
			t.Errorf("%s: k=%.3f r2=%.3f ok=%v, want k≈%v", tc.name, k, r2, ok, tc.want)
		}
	}
	if _, _, ok := FitExponent([]float64{1, 2}, []float64{1, 2}); ok {
		t.Error("two points fitted")
	}
	if _, _, ok := FitExponent([]float64{1, 2, 3}, []float64{0, -1, 0}); ok {
		t.Error("non-positive points fitted")
	}
}
