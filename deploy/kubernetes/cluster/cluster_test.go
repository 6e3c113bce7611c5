//go:build k8scluster

// The cluster test: the chart on a real one-node Kubernetes cluster built by
// build.sh and run by cluster.sh. Behind the build tag k8scluster so that
// `go test ./...` (and .ci/run) never compiles it; run as root:
//
//	cd deploy/kubernetes/cluster && go test -tags k8scluster -run TestCluster -v -timeout 40m
//
// It builds (or takes from the cache) the cluster's binaries and the images,
// brings the cluster up in a temporary directory, runs the dev chain and the
// testbed as host processes on 127.0.0.1 with forwarders on the pods'
// bridge, installs the chart into a namespace enforcing Pod Security
// "restricted", and checks that the CronJobs' probe pods post findings, the
// daemon ranks them and its console answers through its Service; then
// faults, and the history of the log.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	gateway = "10.244.0.1" // the pods' bridge: cluster.sh's GATEWAY
	ns      = "fleetd"
	release = "qa"
)

type env struct {
	t          *testing.T
	dir        string // the cluster's scratch dir
	bin        string // cached cluster binaries
	kubecfg    string
	fleetd     string
	cfg        string // the host-side fleetd config (devnet + testbed)
	times      map[string]time.Duration
	here       string
	installed  time.Time // helm install
	probePods  int       // probe pods whose logs settle read
	reconciled []string  // the reconcile CronJob's lines that released or swept something
}

// platform is the host side the pods probe: the dev chain and its
// testbeds, reached through forwarders on the bridge.
type platform struct {
	chain   chainSide
	targets []map[string]any // target: sections as the pods see them
	rpcPort string
	tbPorts []string
	chainID int64
}

// setup builds (or takes from the cache) the binaries and images, brings
// the cluster up (torn down when t ends), runs the dev chain and ntb
// testbeds on 127.0.0.1 with forwarders on the bridge, and makes the
// namespace, the keys Secret and the PVs. values then gives the chart's
// values; setup installs the chart with them.
func setup(t *testing.T, ntb int, values func(p *platform) map[string]any) (*env, *platform) {
	if os.Getuid() != 0 {
		t.Fatal("the cluster test runs as root (containerd, the kubelet, CNI)")
	}
	e := &env{t: t, times: map[string]time.Duration{}}
	here, _ := os.Getwd()
	e.here = here

	start := time.Now()
	e.sh(10*time.Minute+50*time.Minute, filepath.Join(here, "build.sh"))
	e.times["build.sh"] = time.Since(start)
	cache := os.Getenv("FLEETD_K8S_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "fleetd", "k8s", "v1.34.4")
	}
	e.bin = filepath.Join(cache, "bin")

	imgs := t.TempDir()
	start = time.Now()
	e.sh(20*time.Minute, filepath.Join(here, "images.sh"), imgs)
	e.times["images.sh"] = time.Since(start)
	e.fleetd = filepath.Join(imgs, "fleetd")

	e.dir = t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []string{"kubelet", "kube-controller-manager", "containerd"} {
				b, _ := os.ReadFile(filepath.Join(e.dir, "logs", c+".log"))
				t.Logf("--- %s.log (tail)\n%s", c, tail(string(b), 4000))
			}
		}
		e.shEnv(2*time.Minute, nil, filepath.Join(here, "cluster.sh"), "down", e.dir)
	})
	start = time.Now()
	e.shEnv(5*time.Minute, []string{"FLEETD_K8S_IMAGES=" + filepath.Join(imgs, "pause.tar") + " " + filepath.Join(imgs, "fleetd.tar")},
		filepath.Join(here, "cluster.sh"), "up", e.dir)
	e.times["cluster up"] = time.Since(start)
	e.kubecfg = filepath.Join(e.dir, "admin.kubeconfig")

	// The platform side: the dev chain and the testbed on loopback, as the
	// other end-to-end tests run them; the pods reach them through
	// forwarders on the bridge.
	hostData := t.TempDir()
	var dn struct {
		RPC            string `json:"rpc"`
		ChainID        int64  `json:"chain_id"`
		FeedbackLog    string `json:"feedback_log"`
		SponsorKeyFile string `json:"sponsor_key_file"`
		FleetKeyFile   string `json:"fleet_key_file"`
		Config         string `json:"config"`
	}
	e.jsonLine(exec.Command(e.fleetd, "chain", "devnet", "--data-dir", hostData), &dn)
	e.cfg = dn.Config
	chainID := dn.ChainID
	p := &platform{chainID: chainID, chain: chainSide{RPC: dn.RPC, FeedbackLog: dn.FeedbackLog, FleetKeyFile: dn.FleetKeyFile, SponsorKeyFile: dn.SponsorKeyFile}}
	p.rpcPort = forward(t, dn.RPC)
	for i := 0; i < ntb; i++ {
		var tb struct {
			Target map[string]any `json:"target"`
		}
		e.jsonLine(exec.Command(e.fleetd, "testbed", "serve", "--config", dn.Config), &tb)
		if tb.Target == nil {
			t.Fatal("testbed printed no target")
		}
		reg, _ := tb.Target["registry"].(string)
		p.chain.Registries = append(p.chain.Registries, reg)
		tbJSON, _ := json.Marshal(tb.Target)
		var tbPort string
		if u, ok := tb.Target["call"].(string); ok {
			tbPort = forward(t, u)
		}
		podTarget := strings.ReplaceAll(string(tbJSON), "127.0.0.1:"+tbPort, gateway+":"+tbPort)
		var target map[string]any
		json.Unmarshal([]byte(podTarget), &target)
		target["compiler"] = []string{"/usr/local/bin/fleetd", "testbed", "compile", "{src}"}
		delete(target, "corpus")
		p.targets = append(p.targets, target)
		p.tbPorts = append(p.tbPorts, tbPort)
	}

	// The namespace, enforcing "restricted"; the keys Secret; volumes for
	// the two PVCs (no provisioner on this cluster: static hostPath PVs).
	e.kubectl("create", "namespace", ns)
	e.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted",
		"pod-security.kubernetes.io/enforce-version=latest", "pod-security.kubernetes.io/warn=restricted")
	e.kubectl("-n", ns, "create", "secret", "generic", "fleetd-keys",
		"--from-file=fleet.key="+dn.FleetKeyFile, "--from-file=sponsor.key="+dn.SponsorKeyFile)
	for i, size := range []string{"2Gi", "1Gi"} {
		pv := filepath.Join(e.dir, "pv", strconv.Itoa(i))
		os.MkdirAll(pv, 0o755)
		os.Chown(pv, 65532, 65532)
		e.kubectlIn(fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv%d"},
"spec":{"capacity":{"storage":%q},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain",
"hostPath":{"path":%q,"type":"Directory"}}}`, i, size, pv), "apply", "-f", "-")
	}

	vb, _ := json.Marshal(values(p))
	vf := filepath.Join(t.TempDir(), "values.json")
	os.WriteFile(vf, vb, 0o600)

	helm := os.Getenv("FLEETD_HELM")
	if helm == "" {
		home, _ := os.UserHomeDir()
		helm = filepath.Join(home, ".cache", "fleetd", "bin", "helm")
	}
	installed := time.Now()
	e.run(5*time.Minute, helm, "--kubeconfig", e.kubecfg, "install", release, filepath.Join(here, "..", "fleetd"),
		"-n", ns, "-f", vf, "--wait", "--timeout", "4m")
	e.times["helm install --wait"] = time.Since(installed)
	e.installed = installed
	return e, p
}

// netPolicy is the chart's networkPolicy value for p: the RPC and the
// testbeds on the bridge's address.
func (p *platform) netPolicy() map[string]any {
	var tbs []any
	for _, port := range p.tbPorts {
		tbs = append(tbs, map[string]any{"cidr": gateway + "/32", "port": atoi(port)})
	}
	return map[string]any{"rpc": []any{map[string]any{"cidr": gateway + "/32", "port": atoi(p.rpcPort)}}, "targets": tbs}
}

func TestClusterEndToEnd(t *testing.T) {
	e, p := setup(t, 1, func(p *platform) map[string]any {
		return map[string]any{
			"image":  map[string]any{"repository": "localhost/fleetd/fleetd", "tag": "dev", "pullPolicy": "Never"},
			"chain":  map[string]any{"rpc": "http://" + gateway + ":" + p.rpcPort, "chainId": p.chainID, "feedbackLog": p.chain.FeedbackLog},
			"dial":   "exercise",
			"budget": map[string]any{"deadline": "90s"},
			"targets": []any{map[string]any{"name": "testbed", "target": p.targets[0],
				"specialists": map[string]any{"security": map[string]any{"schedule": "*/1 * * * *"}}}},
			"cronjob":       map[string]any{"startingDeadlineSeconds": 50, "activeDeadlineSeconds": 300, "successfulJobsHistoryLimit": 50, "failedJobsHistoryLimit": 50},
			"triage":        map[string]any{"schedule": "*/1 * * * *"},
			"reconcile":     map[string]any{"schedule": "*/1 * * * *", "olderThan": reconcileAge.String()},
			"networkPolicy": p.netPolicy(),
		}
	})
	installed := e.installed

	// Every CronJob gets Jobs from the real controller manager, on schedule.
	e.waitFor("a probe Job created by the CronJob controller", 3*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "jobs", "-l", "app.kubernetes.io/component=probe", "-o", "name")
		return strings.TrimSpace(out) != "", out
	})
	e.times["helm install → first probe Job"] = time.Since(installed)

	// A probe pod posts a finding to the log.
	var first []finding
	e.waitFor("a finding on the log", 6*time.Minute, func() (bool, string) {
		first = e.findings()
		return len(first) > 0, e.podsSummary()
	})
	e.times["helm install → first finding on the log"] = time.Since(installed)

	// The daemon ranks it; its console answers through its Service (the API
	// server's service proxy dials the Service's endpoints).
	svc := fmt.Sprintf("/api/v1/namespaces/%s/services/%s-fleetd:http/proxy", ns, release)
	e.waitFor("the console's /api/report ranks a cluster", 4*time.Minute, func() (bool, string) {
		out, err := e.kubectlErr("get", "--raw", svc+"/api/report")
		if err != nil {
			return false, out
		}
		var r struct {
			Clusters []json.RawMessage `json:"clusters"`
		}
		if json.Unmarshal([]byte(out), &r) != nil {
			return false, tail(out, 500)
		}
		return len(r.Clusters) > 0, tail(out, 500)
	})
	if out := e.kubectl("get", "--raw", svc+"/healthz"); strings.TrimSpace(out) != "ok" {
		t.Errorf("console /healthz through the Service: %q", out)
	}
	// And through kubectl port-forward, the way README.md gives for a
	// cluster enforcing the chart's NetworkPolicies (node-local traffic).
	if got := e.portForwardGet("svc/"+release+"-fleetd", "/healthz"); strings.TrimSpace(got) != "ok" {
		t.Errorf("console /healthz through kubectl port-forward: %q", got)
	}

	// Faults. A probe pod deleted mid-run.
	e.waitFor("a probe pod running", 3*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=probe",
			"--field-selector=status.phase=Running", "-o", "name")
		if strings.TrimSpace(out) == "" {
			return false, e.podsSummary()
		}
		pod := strings.Fields(out)[0]
		e.kubectl("-n", ns, "delete", pod, "--grace-period=0", "--force", "--wait=false")
		t.Logf("fault: deleted %s mid-run", pod)
		return true, ""
	})
	// A probe container SIGKILLed after it minted a name: no cleanup runs,
	// so its name stays held and its key funded until the reconcile
	// CronJob finds the run from the chain (settle checks it did).
	e.killAfterMint()
	// The kubelet restarted: the node is Ready again and probes still post.
	e.sh(time.Minute, filepath.Join(e.here, "cluster.sh"), "stop", e.dir, "kubelet")
	e.sh(2*time.Minute, filepath.Join(e.here, "cluster.sh"), "start", e.dir, "kubelet")
	e.waitFor("node Ready after the kubelet restart", 2*time.Minute, func() (bool, string) {
		out, _ := e.kubectlErr("get", "node", "fleetd-node", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return out == "True", out
	})
	// etcd stopped for 20 s: the API server answers errors meanwhile, and
	// the control plane carries on when it is back.
	e.sh(time.Minute, filepath.Join(e.here, "cluster.sh"), "stop", e.dir, "etcd")
	time.Sleep(20 * time.Second) // the fault's length, not a wait for a condition
	e.sh(time.Minute, filepath.Join(e.here, "cluster.sh"), "start", e.dir, "etcd")
	e.waitFor("the API server ready after etcd came back", 2*time.Minute, func() (bool, string) {
		out, err := e.kubectlErr("get", "--raw", "/readyz")
		return err == nil && strings.TrimSpace(out) == "ok", out
	})
	// After the faults a probe Job still completes.
	after := time.Now()
	e.waitFor("a probe Job completed after the faults", 5*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "jobs", "-l", "app.kubernetes.io/component=probe", "-o", "json")
		var l struct {
			Items []struct {
				Status struct {
					Succeeded      int        `json:"succeeded"`
					CompletionTime *time.Time `json:"completionTime"`
				} `json:"status"`
			} `json:"items"`
		}
		json.Unmarshal([]byte(out), &l)
		for _, j := range l.Items {
			if j.Status.Succeeded > 0 && j.Status.CompletionTime != nil && j.Status.CompletionTime.After(after) {
				return true, ""
			}
		}
		return false, e.podsSummary()
	})

	// A disk full for a pod: a probe whose data dir, a 160 KiB tmpfs,
	// fills up mid-run. It must fail cleanly, saying so.
	e.diskFull()

	// History: the probes stopped, the reconcile CronJob has had its pass
	// over every run, and the checker reads the chain.
	h := e.settle(p)
	for k, v := range e.times {
		t.Logf("time: %s: %s", k, v.Round(time.Second))
	}
	entries, distinct, runs, keys, names := h.counts()
	t.Logf("history: %d findings on the log, %d distinct; %d runs funded %d throwaway keys, %d names minted; %d findings acknowledged in pod logs",
		entries, distinct, runs, keys, names, len(h.Acked))
	if keys == 0 || names == 0 {
		t.Errorf("history: at dial exercise no throwaway key was funded (%d) or no name minted (%d): the dial did not reach the probes", keys, names)
	}
	if entries == 0 {
		t.Error("history: no finding on the log")
	}
	if len(e.reconciled) == 0 {
		t.Error("history: the reconcile CronJob released and swept nothing, yet a probe was SIGKILLed after it minted a name")
	}
	for _, pr := range h.problems() {
		t.Error("history: " + pr)
	}
}

// reconcileAge is the chart's reconcile.olderThan in the tests: above the
// runs' deadline (budget.deadline) plus their cleanup.
const reconcileAge = 2 * time.Minute

// diskFull runs one Job from the security CronJob's template with its data
// dir a 160 KiB memory-backed emptyDir (a tmpfs of that size: the pod sees
// ENOSPC, as on a full node disk, rather than the kubelet's eviction), and
// checks the probe failed cleanly: exit 1 (infrastructure), "no space left
// on device" on its log naming the path, no panic.
func (e *env) diskFull() {
	t := e.t
	t.Helper()
	cj := e.kubectl("-n", ns, "get", "cronjobs", "-l", "app.kubernetes.io/component=probe", "-o", "json")
	var l struct {
		Items []struct {
			Spec struct {
				JobTemplate struct {
					Spec map[string]any `json:"spec"`
				} `json:"jobTemplate"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(cj), &l); err != nil || len(l.Items) == 0 {
		t.Fatalf("probe CronJobs: %v\n%s", err, tail(cj, 500))
	}
	spec := l.Items[0].Spec.JobTemplate.Spec
	spec["backoffLimit"] = 0
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	replaced := false
	for _, v := range pod["volumes"].([]any) {
		v := v.(map[string]any)
		if v["name"] == "data" {
			v["emptyDir"] = map[string]any{"medium": "Memory", "sizeLimit": "160Ki"}
			replaced = true
		}
	}
	if !replaced {
		t.Fatal("the probe pod template has no volume named data")
	}
	labels := spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
	labels["fleetd.qafleet.dev/fault"] = "disk-full"
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "disk-full", "namespace": ns}, "spec": spec}
	jb, _ := json.Marshal(job)
	e.kubectlIn(string(jb), "apply", "-f", "-")
	var podName string
	e.waitFor("the disk-full probe pod ended", 4*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "pods", "-l", "fleetd.qafleet.dev/fault=disk-full", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.containerStatuses[0].state.terminated.exitCode}{"\n"}{end}`)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && (f[1] == "Failed" || f[1] == "Succeeded") {
				podName = f[0]
				if f[1] != "Failed" || len(f) < 3 || f[2] != "1" {
					t.Errorf("disk-full probe pod %s: %s, want Failed with exit 1 (infrastructure)", f[0], line)
				}
				return true, ""
			}
		}
		return false, out + e.podsSummary()
	})
	log := e.kubectl("-n", ns, "logs", podName, "-c", "fleetd")
	if !strings.Contains(log, "no space left on device") || !strings.Contains(log, "/var/lib/fleetd/") {
		t.Errorf("disk-full probe's log does not say the data dir is full:\n%s", tail(log, 3000))
	}
	for _, bad := range []string{"panic:", "goroutine "} {
		if strings.Contains(log, bad) {
			t.Errorf("disk-full probe's log has %q:\n%s", bad, tail(log, 3000))
		}
	}
	t.Logf("fault: disk full in pod %s: %s", podName, lastLines(log, 3))
}

// killAfterMint waits for a running probe pod whose log shows a
// qa_create that succeeded, and SIGKILLs its fleetd container through this
// cluster's containerd.
func (e *env) killAfterMint() {
	t := e.t
	t.Helper()
	e.waitFor("a running probe that minted a name", 4*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=probe", "--field-selector=status.phase=Running",
			"-o", `jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].containerID} {.metadata.deletionTimestamp}{"\n"}{end}`)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 || !strings.HasPrefix(f[1], "containerd://") {
				continue // not started, or being deleted (the previous fault's pod)
			}
			log, err := e.kubectlErr("-n", ns, "logs", f[0], "-c", "fleetd")
			if err != nil || !mintedRE.MatchString(log) {
				continue
			}
			id := strings.TrimPrefix(f[1], "containerd://")
			cmd := exec.Command("ctr", "--address", filepath.Join(e.dir, "containerd.sock"), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ctr tasks kill %s: %v: %s", id, err, b)
			}
			t.Logf("fault: SIGKILL to pod %s after: %s", f[0], mintedRE.FindString(log))
			return true, ""
		}
		return false, e.podsSummary()
	})
}

// mintedRE matches fleetd probe's narration of a qa_create that succeeded
// ("  turn 3: qa_create    ok   12ms").
var mintedRE = regexp.MustCompile(`turn \d+: qa_create\s+ok\b`)

// settle stops the probes (the CronJobs suspended, the running pods
// finished), waits for a reconcile Job scheduled reconcileAge after that to
// complete (its pass covers every run), collects what every probe pod
// still kept said it acknowledged, and reads the history from the chain.
func (e *env) settle(p *platform) history {
	t := e.t
	t.Helper()
	for _, cj := range strings.Fields(e.kubectl("-n", ns, "get", "cronjobs", "-l", "app.kubernetes.io/component=probe", "-o", "name")) {
		e.kubectl("-n", ns, "patch", cj, "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	}
	e.waitFor("the probe pods finished", 5*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=probe", "-o",
			`jsonpath={range .items[*]}{.status.phase}{"\n"}{end}`)
		return !strings.Contains(out, "Running") && !strings.Contains(out, "Pending"), e.podsSummary()
	})
	quiet := time.Now()
	e.waitFor("a reconcile Job scheduled after the runs' age limit completed", reconcileAge+4*time.Minute, func() (bool, string) {
		out := e.kubectl("-n", ns, "get", "jobs", "-l", "app.kubernetes.io/component=reconcile", "-o", "json")
		var l struct {
			Items []struct {
				Metadata struct {
					CreationTimestamp time.Time `json:"creationTimestamp"`
				} `json:"metadata"`
				Status struct {
					Succeeded int `json:"succeeded"`
				} `json:"status"`
			} `json:"items"`
		}
		json.Unmarshal([]byte(out), &l)
		for _, j := range l.Items {
			if j.Status.Succeeded > 0 && j.Metadata.CreationTimestamp.After(quiet.Add(reconcileAge)) {
				return true, ""
			}
		}
		return false, e.podsSummary()
	})
	// What the reconcile CronJob cleaned up: its lines naming a run it
	// released names of or swept wei from (killed and disk-full runs).
	for _, pod := range strings.Fields(e.kubectl("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=reconcile", "-o", "name")) {
		out, _ := e.kubectlErr("-n", ns, "logs", pod, "-c", "fleetd")
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "chain:") && !strings.Contains(line, " 0 names released, 0 wei swept") && !strings.Contains(line, "skipped") {
				e.reconciled = append(e.reconciled, strings.TrimSpace(line))
				t.Logf("reconcile CronJob (%s): %s", pod, strings.TrimSpace(line))
			}
		}
	}
	acks := map[string]acked{}
	pods := strings.Fields(e.kubectl("-n", ns, "get", "pods", "-l", "app.kubernetes.io/component=probe", "-o", "name"))
	for _, pod := range pods {
		out, err := e.kubectlErr("-n", ns, "logs", pod, "-c", "fleetd")
		if err != nil {
			t.Logf("logs of %s: %v: %s", pod, err, tail(out, 300))
			continue
		}
		parseProbeLog(pod, out, acks)
	}
	e.probePods = len(pods)
	return readHistory(t, p.chain, acks)
}

// portForwardGet runs kubectl port-forward to target's port 8787 on a
// loopback port kubectl picks (stopped when the test ends) and GETs path
// through it.
func (e *env) portForwardGet(target, path string) string {
	t := e.t
	t.Helper()
	cmd := exec.Command(filepath.Join(e.bin, "kubectl"), "--kubeconfig", e.kubecfg, "-n", ns,
		"port-forward", "--address", "127.0.0.1", target, ":8787")
	// "Forwarding from 127.0.0.1:PORT -> 8787"
	l := e.firstLine(cmd, func(l string) bool { return strings.HasPrefix(l, "Forwarding from 127.0.0.1:") })
	port := strings.TrimPrefix(strings.Fields(l)[2], "127.0.0.1:")
	resp, err := http.Get("http://127.0.0.1:" + port + path)
	if err != nil {
		t.Errorf("GET %s through port-forward: %v", path, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

type finding struct {
	Index  uint64 `json:"index"`
	Sender string `json:"sender"`
	Kind   string `json:"kind"`
	FP     string `json:"fp"`
	Source string `json:"source"`
}

// findings reads the log with the fleetd CLI on the host: the qa/v1
// findings (not meta summaries) with a fingerprint.
func (e *env) findings() []finding {
	out := e.run(time.Minute, e.fleetd, "findings", "--json", "--config", e.cfg)
	var fs []finding
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var f finding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			e.t.Fatalf("fleetd findings --json: %v: %q", err, sc.Text())
		}
		if f.FP != "" && (f.Kind == "" || f.Kind == "finding") {
			fs = append(fs, f)
		}
	}
	return fs
}

func (e *env) podsSummary() string {
	out, _ := e.kubectlErr("-n", ns, "get", "pods", "-o", "wide")
	return out
}

func (e *env) kubectl(args ...string) string {
	e.t.Helper()
	out, err := e.kubectlErr(args...)
	if err != nil {
		e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (e *env) kubectlErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.bin, "kubectl"), append([]string{"--kubeconfig", e.kubecfg}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (e *env) kubectlIn(stdin string, args ...string) {
	e.t.Helper()
	cmd := exec.Command(filepath.Join(e.bin, "kubectl"), append([]string{"--kubeconfig", e.kubecfg}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (e *env) sh(d time.Duration, args ...string) string {
	e.t.Helper()
	return e.shEnv(d, nil, args...)
}

func (e *env) shEnv(d time.Duration, extra []string, args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), extra...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 4000))
	}
	return out.String()
}

func (e *env) run(d time.Duration, args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, tail(out.String(), 2000), tail(errb.String(), 2000))
	}
	return out.String()
}

// waitFor polls cond every second until it holds or d passes; on timeout
// the test fails with cond's last note.
func (e *env) waitFor(what string, d time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	end := time.Now().Add(d)
	for {
		ok, note := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			e.t.Fatalf("%s: not after %s\n%s", what, d, note)
		}
		time.Sleep(time.Second)
	}
}

// jsonLine starts cmd, decodes the first line it prints into v, and stops it
// (SIGINT, then SIGKILL) when the test ends.
func (e *env) jsonLine(cmd *exec.Cmd, v any) {
	e.t.Helper()
	l := e.firstLine(cmd, func(string) bool { return true })
	if err := json.Unmarshal([]byte(l), v); err != nil {
		e.t.Fatalf("%v printed %q: %v", cmd.Args, l, err)
	}
}

// firstLine starts cmd, returns the first line it prints that match
// accepts (within 2 minutes), and stops it (SIGINT, then SIGKILL) when the
// test ends.
func (e *env) firstLine(cmd *exec.Cmd, match func(string) bool) string {
	e.t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if match(sc.Text()) {
				lines <- sc.Text()
				break
			}
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			e.t.Fatalf("%v printed nothing: %s", cmd.Args, stderr.String())
		}
		return l
	case <-time.After(2 * time.Minute):
		e.t.Fatalf("%v printed nothing in 2 minutes: %s", cmd.Args, stderr.String())
	}
	return ""
}

// forward listens on the bridge's address at the port of rawURL (a
// 127.0.0.1 URL) and copies each connection to 127.0.0.1 and back: the host
// processes stay on loopback, and the pods, which cannot reach the host's
// loopback, reach them through the bridge. Returns the port.
func forward(t *testing.T, rawURL string) string {
	t.Helper()
	hostport := strings.TrimPrefix(strings.TrimPrefix(rawURL, "http://"), "https://")
	if i := strings.IndexByte(hostport, '/'); i >= 0 {
		hostport = hostport[:i]
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("forward %q: want a 127.0.0.1 URL", rawURL)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway, port))
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { mu.Lock(); delete(conns, c); mu.Unlock(); c.Close() }()
				u, err := net.Dial("tcp", "127.0.0.1:"+port)
				if err != nil {
					return
				}
				mu.Lock()
				conns[u] = true
				mu.Unlock()
				defer func() { mu.Lock(); delete(conns, u); mu.Unlock(); u.Close() }()
				done := make(chan struct{}, 2)
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	return port
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
