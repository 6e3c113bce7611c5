//go:build k8scluster

package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scaleSpecialists are the five the chart can run: ux finds no Chromium in
// the image and says so in its run; fuzz compiles with the image's fleetd
// (target.compiler).
var scaleSpecialists = []string{"smoke", "security", "ux", "perf", "fuzz"}

// TestClusterScale: 3 testbeds × 5 specialists = 15 probe CronJobs on one
// node for FLEETD_K8S_SCALE_MINUTES (default 15) at dial exercise. Each
// CronJob runs every 3 minutes with Forbid, their minutes staggered so that
// 5 start each minute, on a machine of 2 cores shared with other work. Then
// the probes stop, the reconcile CronJob has its pass, and the history
// checker reads the chain: each fingerprint once (duplicates 0), every
// finding a pod acknowledged on the log (lost 0), no wei in a throwaway key,
// no name held.
//
//	cd deploy/kubernetes/cluster && go test -tags k8scluster -run TestClusterScale -v -timeout 60m
func TestClusterScale(t *testing.T) {
	minutes := 15
	if s := os.Getenv("FLEETD_K8S_SCALE_MINUTES"); s != "" {
		var err error
		if minutes, err = strconv.Atoi(s); err != nil || minutes < 1 {
			t.Fatalf("FLEETD_K8S_SCALE_MINUTES=%q: want a whole number of minutes ≥ 1", s)
		}
	}
	small := map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}, "limits": map[string]any{"cpu": "500m", "memory": "384Mi"}}
	e, p := setup(t, 3, func(p *platform) map[string]any {
		var targets []any
		for j, tg := range p.targets {
			specs := map[string]any{}
			for i, s := range scaleSpecialists {
				specs[s] = map[string]any{"schedule": fmt.Sprintf("%d-59/3 * * * *", (i+j)%3)}
			}
			targets = append(targets, map[string]any{"name": fmt.Sprintf("tb%d", j), "target": tg, "specialists": specs})
		}
		res := map[string]any{}
		for _, s := range append([]string{"default", "triage", "daemon"}, scaleSpecialists...) {
			res[s] = small
		}
		return map[string]any{
			"image":         map[string]any{"repository": "localhost/fleetd/fleetd", "tag": "dev", "pullPolicy": "Never"},
			"chain":         map[string]any{"rpc": "http://" + gateway + ":" + p.rpcPort, "chainId": p.chainID, "feedbackLog": p.chain.FeedbackLog},
			"dial":          "exercise",
			"budget":        map[string]any{"deadline": "75s"},
			"targets":       targets,
			"resources":     res,
			"cronjob":       map[string]any{"startingDeadlineSeconds": 100, "activeDeadlineSeconds": 300, "successfulJobsHistoryLimit": 50, "failedJobsHistoryLimit": 50},
			"triage":        map[string]any{"schedule": "*/2 * * * *"},
			"reconcile":     map[string]any{"schedule": "*/1 * * * *", "olderThan": reconcileAge.String()},
			"networkPolicy": p.netPolicy(),
		}
	})
	if n := len(strings.Fields(e.kubectl("-n", ns, "get", "cronjobs", "-l", "app.kubernetes.io/component=probe", "-o", "name"))); n != 15 {
		t.Fatalf("%d probe CronJobs, want 15", n)
	}
	// The run: sample the machine's load and the pods every 15 s.
	end := e.installed.Add(time.Duration(minutes) * time.Minute)
	var loads []float64
	maxRunning := 0
	for time.Now().Before(end) {
		if b, err := os.ReadFile("/proc/loadavg"); err == nil {
			if f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64); err == nil {
				loads = append(loads, f)
			}
		}
		out, _ := e.kubectlErr("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=probe",
			"--field-selector=status.phase=Running", "-o", "name")
		if n := len(strings.Fields(out)); n > maxRunning {
			maxRunning = n
		}
		time.Sleep(15 * time.Second) // the sampling period: the run lasts a set time
	}
	h := e.settle(p)
	ran := e.kubectl("-n", ns, "get", "jobs", "-l", "app.kubernetes.io/component=probe", "-o", "json")
	var jobs struct {
		Items []struct {
			Status struct{ Succeeded, Failed int } `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(ran), &jobs); err != nil {
		t.Fatal(err)
	}
	var succeeded, failed int
	for _, j := range jobs.Items {
		succeeded += j.Status.Succeeded
		failed += j.Status.Failed
	}
	var dups, lost, other int
	for _, pr := range h.problems() {
		switch {
		case strings.HasPrefix(pr, "duplicate:"):
			dups++
		case strings.HasPrefix(pr, "lost:"):
			lost++
		default:
			other++
		}
		t.Error("history: " + pr)
	}
	var lmin, lmax, lsum float64
	for i, l := range loads {
		if i == 0 || l < lmin {
			lmin = l
		}
		if l > lmax {
			lmax = l
		}
		lsum += l
	}
	mean := 0.0
	if len(loads) > 0 {
		mean = lsum / float64(len(loads))
	}
	entries, distinct, runs, keys, names := h.counts()
	for k, v := range e.times {
		t.Logf("time: %s: %s", k, v.Round(time.Second))
	}
	t.Logf("scale: %d minutes, %d Jobs, pods run %d (succeeded %d, failed %d), at most %d probe pods running at once; machine load average (1 min) min %.1f mean %.1f max %.1f",
		minutes, len(jobs.Items), succeeded+failed, succeeded, failed, maxRunning, lmin, mean, lmax)
	t.Logf("scale: findings on the log %d (distinct %d), acknowledged in %d pod logs: %d; duplicates %d, lost %d, stranded/held %d; %d runs funded %d keys, %d names minted",
		entries, distinct, e.probePods, len(h.Acked), dups, lost, other, runs, keys, names)
	if succeeded == 0 || entries == 0 || keys == 0 {
		t.Errorf("scale: nothing ran to completion (%d), posted (%d) or funded (%d)", succeeded, entries, keys)
	}
}
