package cluster

import (
	"math/big"
	"strings"
	"testing"
)

// TestHistoryJudge: the checker's verdict fails on each thing it is there
// to catch (a fingerprint twice, an acknowledged finding missing, wei left
// in a throwaway key, a name still owned) and passes a clean history.
func TestHistoryJudge(t *testing.T) {
	clean := func() history {
		h := history{
			PerFP: map[string]int{"aa01": 1, "bb02": 1},
			Acked: map[string]acked{},
			Keys: []throwaway{{Run: "r-20261206-080000-abcdef", N: 0, Addr: "0x1", Wei: new(big.Int),
				Names: map[string]string{"qa-r-x-0": zeroAddr}}},
		}
		parseProbeLog("pod-a", "run r-1: done\n  finding posted fp=aa01 entry=3\n  finding deduped fp=bb02 entry=<nil>\n  finding rate_limited fp=cc03 entry=<nil>\n", h.Acked)
		return h
	}
	if p := clean().problems(); len(p) != 0 {
		t.Fatalf("a clean history judged: %v", p)
	}
	if e, d, r, k, n := clean().counts(); e != 2 || d != 2 || r != 1 || k != 1 || n != 1 {
		t.Errorf("counts: %d entries %d distinct %d runs %d keys %d names", e, d, r, k, n)
	}
	for _, c := range []struct {
		want   string
		break_ func(*history)
	}{
		{"duplicate: finding aa01 is on the log 2 times", func(h *history) { h.PerFP["aa01"] = 2 }},
		{"lost: finding bb02 acknowledged (deduped) by pod pod-a", func(h *history) { delete(h.PerFP, "bb02") }},
		{"stranded: throwaway key 0x1", func(h *history) { h.Keys[0].Wei = big.NewInt(21000) }},
		{"held: name qa-r-x-0", func(h *history) { h.Keys[0].Names["qa-r-x-0"] = "0x00000000000000000000000000000000000000b0" }},
	} {
		h := clean()
		c.break_(&h)
		p := h.problems()
		if len(p) != 1 || !strings.Contains(p[0], c.want) {
			t.Errorf("want one problem %q, got %q", c.want, p)
		}
	}
	// A rate-limited drop is not a loss; a later pod's ack of it counts.
	h := clean()
	if _, ok := h.Acked["cc03"]; !ok {
		t.Fatal("the rate_limited line was not read")
	}
	parseProbeLog("pod-b", "  finding posted fp=cc03 entry=9\n", h.Acked)
	if p := h.problems(); len(p) != 1 || !strings.Contains(p[0], "lost: finding cc03 acknowledged (posted) by pod pod-b") {
		t.Errorf("a posted finding missing from the log: %q", p)
	}
}

// FuzzParseProbeLog: any pod log parses without panicking, and every
// fingerprint it records came from a line of the log.
func FuzzParseProbeLog(f *testing.F) {
	f.Add("  finding posted fp=aa01 entry=3\n")
	f.Add("  finding rate_limited fp=cc03 entry=<nil>\n  finding queued fp=cc03 entry=<nil>")
	f.Add("\x00finding  fp= entry=")
	f.Fuzz(func(t *testing.T, log string) {
		acks := map[string]acked{}
		parseProbeLog("p", log, acks)
		for fp, a := range acks {
			if !strings.Contains(log, "fp="+fp) || !strings.Contains(log, "finding "+a.Status) {
				t.Fatalf("fp %q status %q not in the log", fp, a.Status)
			}
		}
	})
}
