package specialists

import (
	"fmt"
	"regexp"

	"github.com/qafleet/fleetd/specialists/replay"
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
func perf(p *replay.Play, o Options) {
	// The gas check and compile growth take a bounded number of calls:
	// they go first, so the latency series, whose count grows with each
	// series measured again, cannot take their room under the cap.
	perfGas(p, o.Corpus)
	perfCompile(p, o.Corpus)
	slo := p.Target().SLO.P95Ms
	if slo <= 0 {
		p.Skip("target.slo.p95_ms not set: latencies measured but not judged")
	}
	if p.Can("qa_fetch") {
		for _, n := range replay.First(p.Target().Names, perfFaces) {
			url := p.Target().FaceURL(n)
			perfSeries(p, o.Samples, fmt.Sprintf("the face of %q", n), "qa_fetch", map[string]any{"url": url}, url)
		}
		for _, d := range replay.First(p.Target().Docs, perfDocs) {
			perfSeries(p, o.Samples, "the docs page "+d, "qa_fetch", map[string]any{"url": d}, "")
		}
	} else {
		p.Skip("qa_fetch unavailable: page latency not measured")
	}
	if p.Can("qa_call") {
		for _, n := range replay.First(p.Target().Names, perfCalls) {
			a := replay.CallArgs{Target: n, Message: "hello"}
			if !perfSeries(p, o.Samples, fmt.Sprintf("a call to %q", n), "qa_call", a, p.Target().Call) {
				break
			}
		}
	} else if p.Has("qa_call") {
		// The gas check's qa_create was refused at this dial, so qa_call,
		// on the same rung, is not tried.
		p.Skip("qa_call refused by the dial, as qa_create was: call latency not measured")
	}
	p.Notef("cross-run latency history is not compared (a run sees only itself)")
}

var (
	declLine   = regexp.MustCompile(`^\s*(?:let|var|const|val|auto|int|my|local|def)\s+([A-Za-z_]\w*)\s*:?=\s*(.+)$`)
	plainWords = map[string]bool{"true": true, "false": true, "nil": true, "null": true, "none": true, "None": true}
)
