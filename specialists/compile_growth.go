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
	"github.com/qafleet/fleetd/specialists/replay"
)

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
func perfCompile(p *replay.Play, corpus []string) {
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
			p.Skip("no room left under the call cap: compile growth not measured")
			return
		}
		r := p.Compile(g.build(8))
		if replay.Str(r, "outcome") == "compiled" {
			gen = g
			base, _ = replay.Num(r, "duration_ms")
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
		d, _ := replay.Num(r, "duration_ms")
		out := replay.Str(r, "outcome")
		if out == "timeout" {
			sizes = append(sizes, fmt.Sprintf("%s timed out", kb(len(src))))
			break
		}
		if out != "compiled" {
			p.Notef("compile growth: the %s input was %s", kb(len(src)), out)
			break
		}
		sizes = append(sizes, fmt.Sprintf("%s in %s", kb(len(src)), replay.Millis(d)))
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
	desc := fmt.Sprintf("exponent %.2f (R² %.2f) fitting compile time against input size over the %d largest of these sizes: %s; startup %s subtracted", k, r2, len(xs), strings.Join(sizes, ", "), replay.Millis(base))
	if k <= perfExponent || largest < perfSlowMS {
		p.Notef("compile growth: %s", desc)
		return
	}
	ident := ""
	if gen.ident != "" {
		ident = fmt.Sprintf(" with %s renamed %s_0, %s_1, …", gen.ident, gen.ident, gen.ident)
	}
	p.File(fleet.SeverityMedium, fleet.SurfaceCompiler,
		fmt.Sprintf("Compile time grows super-linearly with input size: %s. Expected roughly linear growth. Input: the corpus line %s repeated once per line%s. No repro: the smallest input that shows the slowdown does not fit a feedback entry; regenerate it from that line.",
			desc, replay.Quote(gen.line, 120), ident),
		"", nil)
}

// kb renders a byte count.
func kb(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return strconv.FormatFloat(math.Round(float64(n)/1024), 'f', -1, 64) + " KB"
}
