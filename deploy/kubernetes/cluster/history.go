// Package cluster holds the chart's cluster test (cluster_test.go, build tag
// k8scluster) and the judge of its history checker, which is built and
// tested without a cluster.
package cluster

import (
	"bufio"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
)

// history is what the cluster's history checker read after the faults
// stopped, from the chain alone (the probe pods' data dirs died with them)
// and from the probe pods' logs. It is the chain half of cmd/fleetd's
// checkHistory (faults_test.go): there every acknowledged finding comes from
// the run records on disk; here from what each pod printed.
type history struct {
	PerFP map[string]int   // fingerprint → entries on the log under the fleet identity
	Keys  []throwaway      // every throwaway key the sponsor funded
	Acked map[string]acked // fingerprint → what a probe pod said it did with it
}

// throwaway is one funded throwaway key as the chain has it now.
type throwaway struct {
	Run   string
	N     int
	Addr  string
	Wei   *big.Int
	Names map[string]string // name registered to it → its owner now ("" or the zero address: released)
}

// acked is a finding a probe pod reported: its status and the pod.
type acked struct {
	Status, Pod string
}

const zeroAddr = "0x0000000000000000000000000000000000000000"

// problems is the checker's verdict: each fingerprint on the log once;
// every finding a pod acknowledged (posted, queued or found a duplicate;
// rate_limited is a drop by design) on the log, once; every throwaway key
// at 0 wei; every name it was registered unowned.
func (h history) problems() []string {
	var out []string
	for fp, n := range h.PerFP {
		if n != 1 {
			out = append(out, fmt.Sprintf("duplicate: finding %s is on the log %d times", fp, n))
		}
	}
	for fp, a := range h.Acked {
		if a.Status == "rate_limited" {
			continue
		}
		if h.PerFP[fp] == 0 {
			out = append(out, fmt.Sprintf("lost: finding %s acknowledged (%s) by pod %s is not on the log", fp, a.Status, a.Pod))
		}
	}
	for _, k := range h.Keys {
		if k.Wei == nil || k.Wei.Sign() != 0 {
			out = append(out, fmt.Sprintf("stranded: throwaway key %s (run %s #%d) holds %v wei", k.Addr, k.Run, k.N, k.Wei))
		}
		for name, owner := range k.Names {
			if owner != "" && !strings.EqualFold(owner, zeroAddr) {
				out = append(out, fmt.Sprintf("held: name %s (run %s) still registered to %s", name, k.Run, owner))
			}
		}
	}
	sort.Strings(out)
	return out
}

// counts sums up h for the closing note.
func (h history) counts() (entries, distinct, runs, keys, names int) {
	seen := map[string]bool{}
	for _, n := range h.PerFP {
		entries += n
	}
	for _, k := range h.Keys {
		seen[k.Run] = true
		names += len(k.Names)
	}
	return entries, len(h.PerFP), len(seen), len(h.Keys), names
}

// findingLine is what `fleetd probe` prints on stdout for each finding
// (cmd/fleetd/cmd_probe.go): "  finding STATUS fp=FP entry=ID".
var findingLine = regexp.MustCompile(`^\s+finding (\S+) fp=([0-9a-f]+) entry=`)

// parseProbeLog adds the findings a probe pod's log acknowledges to acks.
// A later status for the same fingerprint (another pod) keeps the first
// unless the first was rate_limited.
func parseProbeLog(pod, log string, acks map[string]acked) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := findingLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if a, ok := acks[m[2]]; ok && a.Status != "rate_limited" {
			continue
		}
		acks[m[2]] = acked{Status: m[1], Pod: pod}
	}
}
