package specialists

import (
	"math"
	"slices"
)

// Percentile returns the q-th percentile (0 < q <= 100) of samples by the
// nearest-rank method: the smallest sample with at least q% of the samples
// at or below it. It returns 0 for no samples. With eight samples p95 is the
// largest, which is the honest answer for so few.
func Percentile(samples []float64, q float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(q / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// FitExponent fits y = c·x^k by least squares on log y against log x and
// returns k and the fit's R². Points with x or y not positive are ignored;
// ok is false with fewer than three usable points or no spread in x.
func FitExponent(xs, ys []float64) (k, r2 float64, ok bool) {
	var lx, ly []float64
	for i := range min(len(xs), len(ys)) {
		if xs[i] > 0 && ys[i] > 0 {
			lx = append(lx, math.Log(xs[i]))
			ly = append(ly, math.Log(ys[i]))
		}
	}
	n := float64(len(lx))
	if len(lx) < 3 {
		return 0, 0, false
	}
	var sx, sy float64
	for i := range lx {
		sx += lx[i]
		sy += ly[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for i := range lx {
		dx, dy := lx[i]-mx, ly[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return 0, 0, false
	}
	k = sxy / sxx
	if syy == 0 {
		return k, 1, true
	}
	return k, sxy * sxy / (sxx * syy), true
}
