package specialists

import (
	"fmt"
	"slices"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// perfSeries takes Options.Samples measurements of one call and judges the
// p95 against the SLO. It returns false when the tool was refused.
func perfSeries(p *replay.Play, samples int, what, tool string, args any, where string) bool {
	var lat []float64
	failed := 0
	for range samples {
		if !p.Room(1) || !p.Can(tool) {
			break
		}
		ex := p.Exchange(tool, args)
		if replay.RefusedByDial(ex) {
			p.Skip("%s refused (%s): its latency not measured", tool, ex.Result.Err())
			return false
		}
		if !replay.Answered(ex.Result) || replay.Status(ex.Result) >= 400 {
			failed++
			if failed == 2 && len(lat) == 0 {
				break // an endpoint that fails is smoke's finding, not a latency
			}
			continue
		}
		if l, ok := replay.Latency(ex.Result); ok {
			lat = append(lat, l)
		}
	}
	if len(lat) == 0 {
		p.Notef("%s: no successful samples", what)
		return true
	}
	p50, p95 := Percentile(lat, 50), Percentile(lat, 95)
	stats := fmt.Sprintf("p50 %s, p95 %s, max %s, N=%d", replay.Millis(p50), replay.Millis(p95), replay.Millis(slices.Max(lat)), len(lat))
	if failed > 0 {
		stats += fmt.Sprintf(", %d failed", failed)
	}
	slo := p.Target().SLO.P95Ms
	if where != "" {
		what += " (" + where + ")"
	}
	if slo > 0 && p95 > float64(slo) {
		p.File(fleet.SeverityMedium, "perf",
			fmt.Sprintf("Latency of %s is over the SLO: p95 %s against a p95 objective of %d ms (%s, as measured by the tool including transfer).",
				what, replay.Millis(p95), slo, stats),
			tool, args)
	} else {
		p.Notef("%s: %s", what, stats)
	}
	return true
}
