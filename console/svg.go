package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// The charts are SVG drawn from numbers only: every attribute value is
// computed here, labels are text the templates escape, and colours come
// from CSS classes (no inline style, so the CSP needs no 'unsafe-inline').

// Chart is the trend picture: active clusters by severity over time, one
// stacked band per severity, drawn in a W×H box.
type Chart struct {
	W, H   int
	Bands  []Band
	Max    int    // the y axis top
	From   string // first report's date
	To     string // last report's date
	Points int
	Latest []Legend // the newest report's counts, for the legend
}

// Band is one severity's area.
type Band struct {
	Class  string // sev-<severity>, or sev-beyond
	Points string // the polygon's points
	Label  string
}

// Legend is one severity's count in the newest report.
type Legend struct {
	Class, Label string
	N            int
}

const (
	chartW = 720
	chartH = 180
	chartP = 4 // padding
)

// maxTrendPoints and maxSparkPoints bound what a chart draws: more points
// than pixels only cost bytes. Longer histories are sampled evenly, the
// newest report always kept.
const (
	maxTrendPoints = 240
	maxSparkPoints = 50
)

// sample returns n evenly spaced indexes of a series of length total (all
// when total <= n), first and last included.
func sample(total, n int) []int {
	if total <= n || n < 2 {
		out := make([]int, total)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i * (total - 1) / (n - 1)
	}
	return out
}

// trendChart draws h; nil when there are fewer than one point.
func trendChart(h *History) *Chart {
	var pts []TrendPoint
	for _, i := range sample(len(h.Points), maxTrendPoints) {
		pts = append(pts, h.Points[i])
	}
	if len(pts) == 0 {
		return nil
	}
	type layer struct {
		class, label string
		val          func(TrendPoint) int
	}
	var layers []layer
	for _, s := range trendSeverities {
		s := s
		layers = append(layers, layer{"sev-" + string(s), string(s), func(p TrendPoint) int { return p.Open[s] }})
	}
	layers = append(layers, layer{"sev-beyond", "beyond the kept rows", TrendPoint.Beyond})
	top := 1
	for _, p := range pts {
		sum := 0
		for _, l := range layers {
			sum += l.val(p)
		}
		top = max(top, sum)
	}
	t0, t1 := pts[0].Time, pts[len(pts)-1].Time
	span := t1.Sub(t0)
	x := func(i int) float64 {
		w := float64(chartW - 2*chartP)
		switch {
		case len(pts) == 1:
			return chartP + w/2
		case span <= 0:
			return chartP + w*float64(i)/float64(len(pts)-1)
		}
		return chartP + w*float64(pts[i].Time.Sub(t0))/float64(span)
	}
	y := func(v int) float64 {
		return float64(chartH-chartP) - float64(chartH-2*chartP)*float64(v)/float64(top)
	}
	c := &Chart{W: chartW, H: chartH, Max: top, From: t0.UTC().Format("2006-01-02 15:04"), To: t1.UTC().Format("2006-01-02 15:04"), Points: len(pts)}
	base := make([]int, len(pts))
	for _, l := range layers {
		next := make([]int, len(pts))
		any := false
		for i, p := range pts {
			next[i] = base[i] + l.val(p)
			if l.val(p) > 0 {
				any = true
			}
		}
		if any {
			var b strings.Builder
			if len(pts) == 1 { // one report: a bar
				x0, x1 := x(0)-20, x(0)+20
				fmt.Fprintf(&b, "%s,%s %s,%s %s,%s %s,%s", f1(x0), f1(y(base[0])), f1(x0), f1(y(next[0])), f1(x1), f1(y(next[0])), f1(x1), f1(y(base[0])))
			} else {
				for i := range pts {
					fmt.Fprintf(&b, "%s,%s ", f1(x(i)), f1(y(next[i])))
				}
				for i := len(pts) - 1; i >= 0; i-- {
					fmt.Fprintf(&b, "%s,%s ", f1(x(i)), f1(y(base[i])))
				}
			}
			c.Bands = append(c.Bands, Band{Class: l.class, Points: strings.TrimSpace(b.String()), Label: l.label})
		}
		base = next
	}
	last := pts[len(pts)-1]
	for _, l := range layers {
		if n := l.val(last); n > 0 {
			c.Latest = append(c.Latest, Legend{Class: l.class, Label: l.label, N: n})
		}
	}
	return c
}

// Spark is a per-cluster sparkline of its occurrence count across the dated
// reports.
type Spark struct {
	W, H   int
	Lines  []string // polyline point lists; a report that did not keep the cluster breaks the line
	Dots   []Dot    // single kept points
	Title  string
	Growth int // occurrences added over the history shown
}

// Dot is a point on its own.
type Dot struct{ X, Y string }

const (
	sparkW = 100
	sparkH = 20
)

// sparkline draws counts (-1: not kept); nil when nothing was kept.
func sparkline(all []int) *Spark {
	counts := make([]int, 0, min(len(all), maxSparkPoints))
	for _, i := range sample(len(all), maxSparkPoints) {
		counts = append(counts, all[i])
	}
	top, first, last := 0, -1, -1
	for _, v := range counts {
		if v < 0 {
			continue
		}
		top = max(top, v)
		if first < 0 {
			first = v
		}
		last = v
	}
	if first < 0 {
		return nil
	}
	top = max(top, 1)
	n := len(counts)
	x := func(i int) string {
		if n == 1 {
			return f1(sparkW / 2)
		}
		return f1(1 + float64(sparkW-2)*float64(i)/float64(n-1))
	}
	y := func(v int) string { return f1(float64(sparkH-1) - float64(sparkH-2)*float64(v)/float64(top)) }
	s := &Spark{W: sparkW, H: sparkH, Growth: last - first}
	var seg []string
	flush := func() {
		switch len(seg) {
		case 0:
		case 1:
			xy := strings.SplitN(seg[0], ",", 2)
			s.Dots = append(s.Dots, Dot{xy[0], xy[1]})
		default:
			s.Lines = append(s.Lines, strings.Join(seg, " "))
		}
		seg = nil
	}
	for i, v := range counts {
		if v < 0 {
			flush()
			continue
		}
		seg = append(seg, x(i)+","+y(v))
	}
	flush()
	s.Title = fmt.Sprintf("%d → %d occurrences over %d reports", first, last, len(all))
	return s
}

const (
	fuzzPlotW = 160
	fuzzPlotH = 32
)

// fuzzPlot draws a target's coverage over time (x by session end, so a
// long pause shows as a long flat stretch); nil without points. It is a
// Spark: the same partial draws it.
func fuzzPlot(all []FuzzPoint, what string) *Spark {
	var pts []FuzzPoint
	for _, i := range sample(len(all), maxSparkPoints) {
		pts = append(pts, all[i])
	}
	if len(pts) == 0 {
		return nil
	}
	top := 1
	for _, p := range pts {
		top = max(top, p.Coverage)
	}
	t0, span := pts[0].Time, pts[len(pts)-1].Time.Sub(pts[0].Time)
	x := func(i int) string {
		w := float64(fuzzPlotW - 2)
		switch {
		case len(pts) == 1:
			return f1(fuzzPlotW / 2)
		case span <= 0:
			return f1(1 + w*float64(i)/float64(len(pts)-1))
		}
		return f1(1 + w*float64(pts[i].Time.Sub(t0))/float64(span))
	}
	y := func(v int) string { return f1(float64(fuzzPlotH-1) - float64(fuzzPlotH-2)*float64(v)/float64(top)) }
	s := &Spark{W: fuzzPlotW, H: fuzzPlotH, Growth: pts[len(pts)-1].Coverage - pts[0].Coverage}
	if len(pts) == 1 {
		s.Dots = []Dot{{x(0), y(pts[0].Coverage)}}
	} else {
		seg := make([]string, len(pts))
		for i, p := range pts {
			seg[i] = x(i) + "," + y(p.Coverage)
		}
		s.Lines = []string{strings.Join(seg, " ")}
	}
	s.Title = fmt.Sprintf("%s %d → %d over %d sessions, %s", what, pts[0].Coverage, pts[len(pts)-1].Coverage, len(all), coarse(span))
	return s
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// sevClass is the CSS class of a severity (a fleet.Severity or the string
// of one, as events carry it).
func sevClass(v any) string {
	s := fleet.Severity(fmt.Sprint(v))
	switch s {
	case fleet.SeverityCritical, fleet.SeverityHigh, fleet.SeverityMedium, fleet.SeverityLow, fleet.SeverityInfo, fleet.SeverityMeta:
		return "sev-" + string(s)
	}
	return "sev-unknown"
}

// ago says how long before now t was, coarsely.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + coarse(-d)
	case d < 5*time.Second:
		return "just now"
	}
	return coarse(d) + " ago"
}

func coarse(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
