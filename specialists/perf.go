package specialists

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/fuzzstage"
	"github.com/qafleet/fleetd/specialists/probe"
)

// Perf limits.
const (
	perfFaces        = 3         // faces measured
	perfDocs         = 2         // docs pages measured
	perfCalls        = 2         // public names called
	perfStartBytes   = 16 << 10  // the smallest generated compile input
	perfMaxBytes     = 768 << 10 // the largest
	perfFitPoints    = 3         // the exponent is fitted over the largest sizes
	perfMaxCompileMS = 2000      // stop growing once a compile takes this long
	perfMinMS        = 5         // points faster than this are noise
	perfExponent     = 1.35      // super-linear above this (n log n stays near 1.1; a quadratic term shows 1.5+ by 0.75 MiB)
	perfSlowMS       = 200       // and only when the largest point is this slow
)

// perf measures latency against the SLO, compile time growth and gas; see
// the package doc.
func perf(p *probe.Probe, o Options) {
	slo := p.Target().SLO.P95Ms
	if slo <= 0 {
		p.Skip("target.slo.p95_ms not set: latencies measured but not judged")
	}
	if p.Can("qa_fetch") {
		for _, n := range probe.First(p.Target().Names, perfFaces) {
			url := p.Target().FaceURL(n)
			perfSeries(p, o.Samples, fmt.Sprintf("the face of %q", n), "qa_fetch", map[string]any{"url": url}, url)
		}
		for _, d := range probe.First(p.Target().Docs, perfDocs) {
			perfSeries(p, o.Samples, "the docs page "+d, "qa_fetch", map[string]any{"url": d}, "")
		}
	} else {
		p.Skip("qa_fetch unavailable: page latency not measured")
	}
	if p.Can("qa_call") {
		for _, n := range probe.First(p.Target().Names, perfCalls) {
			a := probe.CallArgs{Target: n, Message: "hello"}
			if !perfSeries(p, o.Samples, fmt.Sprintf("a call to %q", n), "qa_call", a, p.Target().Call) {
				break
			}
		}
	}
	perfGas(p, o.Corpus)
	perfCompile(p, o.Corpus)
	p.Notef("cross-run latency history is not compared (a run sees only itself)")
}

// perfSeries takes Options.Samples measurements of one call and judges the
// p95 against the SLO. It returns false when the tool was refused.
func perfSeries(p *probe.Probe, samples int, what, tool string, args any, where string) bool {
	var lat []float64
	failed := 0
	for range samples {
		if !p.Room(1) || !p.Can(tool) {
			break
		}
		ex := p.Exchange(tool, args)
		if probe.RefusedByDial(ex) {
			p.Skip("%s refused (%s): its latency not measured", tool, ex.Result.Err())
			return false
		}
		if !probe.Answered(ex.Result) || probe.Status(ex.Result) >= 400 {
			failed++
			if failed == 2 && len(lat) == 0 {
				break // an endpoint that fails is smoke's finding, not a latency
			}
			continue
		}
		if l, ok := probe.Latency(ex.Result); ok {
			lat = append(lat, l)
		}
	}
	if len(lat) == 0 {
		p.Notef("%s: no successful samples", what)
		return true
	}
	p50, p95 := Percentile(lat, 50), Percentile(lat, 95)
	stats := fmt.Sprintf("p50 %s, p95 %s, max %s, N=%d", probe.Millis(p50), probe.Millis(p95), probe.Millis(slices.Max(lat)), len(lat))
	if failed > 0 {
		stats += fmt.Sprintf(", %d failed", failed)
	}
	slo := p.Target().SLO.P95Ms
	if where != "" {
		what += " (" + where + ")"
	}
	if slo > 0 && p95 > float64(slo) {
		p.Report(fleet.SeverityMedium, "perf",
			fmt.Sprintf("Latency of %s is over the SLO: p95 %s against a p95 objective of %d ms (%s, as measured by the tool including transfer).",
				what, probe.Millis(p95), slo, stats),
			tool, args)
	} else {
		p.Notef("%s: %s", what, stats)
	}
	return true
}

// perfGas publishes a known-good program to a fresh name and compares the
// gas estimate with the gas used.
func perfGas(p *probe.Probe, corpus []string) {
	switch {
	case !p.Has("qa_create") || !p.Has("qa_publish"):
		return
	case len(corpus) == 0:
		p.Skip("no corpus: gas check skipped")
		return
	case !p.Can("qa_create") || !p.Can("qa_publish"):
		p.Skip("qa_create not allowed: gas check skipped")
		return
	case !p.Room(2):
		return
	}
	ex := p.Exchange("qa_create", map[string]any{})
	name := probe.Str(ex.Result, "name")
	if probe.RefusedByDial(ex) || !ex.Result.IsOK() || name == "" {
		p.Skip("no fresh name for the gas check (%s)", probe.Clip(ex.Result.Err(), 120))
		return
	}
	src := bySize(corpus)[0]
	r := p.Publish(name, src)
	est, ok1 := probe.Num(r, "gas_estimated")
	used, ok2 := probe.Num(r, "gas_used")
	if !r.IsOK() || !ok1 || !ok2 || used <= 0 {
		p.Skip("publish for the gas check failed (%s)", probe.Clip(r.Err(), 120))
		return
	}
	steps := fmt.Sprintf("Steps: qa_create, then qa_publish the smallest corpus program (%d bytes) to the new name and compare gas_estimated with gas_used.", len(src))
	switch {
	case used > est:
		p.Report(fleet.SeverityMedium, fleet.SurfaceRegistry,
			fmt.Sprintf("The gas estimate for publishing (setMetadata) is below the gas the transaction used: estimated %.0f, used %.0f; transactions sent with the estimate run out of gas. %s", est, used, steps), "", nil)
	case est > 2*used:
		p.Report(fleet.SeverityLow, fleet.SurfaceRegistry,
			fmt.Sprintf("The gas estimate for publishing (setMetadata) is more than twice the gas used: estimated %.0f, used %.0f; users lock up more funds than needed. %s", est, used, steps), "", nil)
	default:
		p.Notef("publish gas: estimated %.0f, used %.0f", est, used)
	}
}

// unitGen builds compile inputs of growing size from one corpus line.
type unitGen struct {
	line  string // the template line
	ident string // the identifier made unique per copy, "" to repeat as is
}

func (g unitGen) build(n int) string {
	parts := []string{g.line}
	if g.ident != "" {
		parts = regexp.MustCompile(`\b`+regexp.QuoteMeta(g.ident)+`\b`).Split(g.line, -1)
	}
	var b strings.Builder
	for i := range n {
		for j, part := range parts {
			if j > 0 {
				b.WriteString(g.ident)
				b.WriteByte('_')
				b.WriteString(strconv.Itoa(i))
			}
			b.WriteString(part)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	declLine   = regexp.MustCompile(`^\s*(?:let|var|const|val|auto|int|my|local|def)\s+([A-Za-z_]\w*)\s*:?=\s*(.+)$`)
	plainWords = map[string]bool{"true": true, "false": true, "nil": true, "null": true, "none": true, "None": true}
)

// generators finds lines of the corpus that can be repeated into a valid
// program of any size: declarations of constants (renamed per copy) and
// statements that use no identifier but their leading keyword.
func generators(corpus []string) []unitGen {
	var decls, stmts []unitGen
	for _, src := range bySize(corpus) {
		for l := range strings.Lines(src) {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "//") || strings.HasPrefix(l, "#") || len(l) > 120 {
				continue
			}
			if m := declLine.FindStringSubmatch(l); m != nil {
				if onlyLiterals(m[2]) && len(decls) < 2 && !slices.ContainsFunc(decls, func(g unitGen) bool { return g.line == l }) {
					decls = append(decls, unitGen{line: l, ident: m[1]})
				}
				continue
			}
			ids := fuzzstage.IdentRE.FindAllString(stringLiteral.ReplaceAllString(l, `""`), -1)
			if len(ids) == 1 && strings.HasPrefix(l, ids[0]) && strings.HasSuffix(l, ";") && len(stmts) < 1 {
				stmts = append(stmts, unitGen{line: l})
			}
		}
	}
	return append(decls, stmts...)
}

// onlyLiterals reports whether an expression uses no identifiers.
func onlyLiterals(expr string) bool {
	for _, id := range fuzzstage.IdentRE.FindAllString(stringLiteral.ReplaceAllString(expr, `""`), -1) {
		if !plainWords[id] && !fuzzstage.NumberRE.MatchString(id) {
			return false
		}
	}
	return true
}

// perfCompile compiles a generated program at doubling sizes and fits the
// growth exponent of compile time against input size.
func perfCompile(p *probe.Probe, corpus []string) {
	switch {
	case len(p.Target().Compiler) == 0:
		p.Skip("target.compiler not configured: compile growth not measured")
		return
	case len(corpus) == 0:
		p.Skip("no corpus: no known-good line to grow a compile input from")
		return
	case !p.Can("qa_compile"):
		p.Skip("qa_compile unavailable: compile growth not measured")
		return
	}
	var gen unitGen
	base := -1.0
	for _, g := range generators(corpus) {
		if !p.Room(1) {
			return
		}
		r := p.Compile(g.build(8))
		if probe.Str(r, "outcome") == "compiled" {
			gen = g
			base, _ = probe.Num(r, "duration_ms")
			break
		}
	}
	if base < 0 {
		p.Skip("no corpus line repeats into a program that compiles: compile growth not measured")
		return
	}
	unit := len(gen.build(1))
	var xs, ys []float64
	var sizes []string
	last, prev := false, 0
	for n := max(1, perfStartBytes/unit); !last; prev, n = n, n*2 {
		if !p.Room(1) {
			break
		}
		src := gen.build(n)
		if len(src) > perfMaxBytes {
			// One last point at the largest size: growth shows best where
			// the linear terms weigh least, and doubling would overshoot it.
			if n = int(float64(n) * 0.98 * float64(perfMaxBytes) / float64(len(src))); n <= prev {
				break
			}
			src, last = gen.build(n), true
			if len(src) > perfMaxBytes {
				break
			}
		}
		r := p.Compile(src)
		d, _ := probe.Num(r, "duration_ms")
		out := probe.Str(r, "outcome")
		if out == "timeout" {
			sizes = append(sizes, fmt.Sprintf("%s timed out", kb(len(src))))
			break
		}
		if out != "compiled" {
			p.Notef("compile growth: the %s input was %s", kb(len(src)), out)
			break
		}
		sizes = append(sizes, fmt.Sprintf("%s in %s", kb(len(src)), probe.Millis(d)))
		// Points below the process's own startup time are mostly noise.
		if adj := d - base; adj >= max(perfMinMS, base) {
			xs, ys = append(xs, float64(len(src))), append(ys, adj)
		}
		if d >= perfMaxCompileMS {
			break
		}
	}
	// Growth shows at the largest sizes, where startup and linear terms
	// no longer dominate: fit over those.
	if len(xs) > perfFitPoints {
		xs, ys = xs[len(xs)-perfFitPoints:], ys[len(ys)-perfFitPoints:]
	}
	k, r2, ok := FitExponent(xs, ys)
	if !ok {
		p.Notef("compile growth: too few measurable sizes (%s)", strings.Join(sizes, ", "))
		return
	}
	largest := slices.Max(ys)
	desc := fmt.Sprintf("exponent %.2f (R² %.2f) fitting compile time against input size over the %d largest of these sizes: %s; startup %s subtracted", k, r2, len(xs), strings.Join(sizes, ", "), probe.Millis(base))
	if k <= perfExponent || largest < perfSlowMS {
		p.Notef("compile growth: %s", desc)
		return
	}
	ident := ""
	if gen.ident != "" {
		ident = fmt.Sprintf(" with %s renamed %s_0, %s_1, …", gen.ident, gen.ident, gen.ident)
	}
	p.Report(fleet.SeverityMedium, fleet.SurfaceCompiler,
		fmt.Sprintf("Compile time grows super-linearly with input size: %s. Expected roughly linear growth. Input: the corpus line %s repeated once per line%s. No repro: the smallest input that shows the slowdown does not fit a feedback entry; regenerate it from that line.",
			desc, probe.Quote(gen.line, 120), ident),
		"", nil)
}

// kb renders a byte count.
func kb(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return strconv.FormatFloat(math.Round(float64(n)/1024), 'f', -1, 64) + " KB"
}
