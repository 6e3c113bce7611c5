package specialists

import (
	"fmt"
	"slices"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// perfSeries takes Options.Samples measurements of one call and judges the
// p95 against the SLO. A series over the SLO is measured again before it
// is filed: in a short series the p95 is one answer (of 4, the slowest), so
// one stall of the machine or the network would be a finding. It is filed
// when the second series is over the SLO too (or there is no room for one),
// on both series' samples; when the second is under, it is a note. It
// returns false when the tool was refused.
func perfSeries(p *replay.Play, samples int, what, tool string, args any, where string) bool {
	lat, failed, ok := perfSamples(p, samples, tool, args)
	if !ok {
		return false
	}
	if len(lat) == 0 {
		p.Notef("%s: no successful samples", what)
		return true
	}
	if where != "" {
		what += " (" + where + ")"
	}
	slo := float64(p.Target().SLO.P95Ms)
	if slo <= 0 || Percentile(lat, 95) <= slo {
		p.Notef("%s: %s", what, latencyStats(lat, failed))
		return true
	}
	again, failedAgain, ok := perfSamples(p, samples, tool, args)
	if !ok {
		return false
	}
	confirmed := "confirmed by a second series"
	switch {
	case len(again) == 0:
		confirmed = "no second series could be taken to confirm it"
	case Percentile(again, 95) <= slo:
		p.Notef("%s: over the SLO in one series (%s), under it in a second (%s): a transient, not filed",
			what, latencyStats(lat, failed), latencyStats(again, failedAgain))
		return true
	}
	all := append(lat, again...)
	p95 := Percentile(all, 95)
	p.File(fleet.SeverityMedium, "perf",
		fmt.Sprintf("Latency of %s is over the SLO: p95 %s against a p95 objective of %d ms (%s, %s; as measured by the tool including transfer).",
			what, replay.Millis(p95), p.Target().SLO.P95Ms, latencyStats(all, failed+failedAgain), confirmed),
		tool, args)
	return true
}

// perfSamples measures one call up to n times: the latencies of the
// successful answers, how many failed, and false when the tool was refused.
func perfSamples(p *replay.Play, n int, tool string, args any) (lat []float64, failed int, ok bool) {
	for range n {
		if !p.Room(1) || !p.Can(tool) {
			break
		}
		ex := p.Exchange(tool, args)
		if replay.RefusedByDial(ex) {
			p.Skip("%s refused (%s): its latency not measured", tool, ex.Result.Err())
			return nil, failed, false
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
	return lat, failed, true
}

// latencyStats is a series' figures for people.
func latencyStats(lat []float64, failed int) string {
	s := fmt.Sprintf("p50 %s, p95 %s, max %s, N=%d", replay.Millis(Percentile(lat, 50)), replay.Millis(Percentile(lat, 95)), replay.Millis(slices.Max(lat)), len(lat))
	if failed > 0 {
		s += fmt.Sprintf(", %d failed", failed)
	}
	return s
}
