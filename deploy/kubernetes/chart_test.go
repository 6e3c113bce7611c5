// Package kubernetes holds fleetd's Helm chart (./fleetd) and the test that
// renders it with `helm template` and decodes every manifest strictly into
// the Kubernetes API types. It is its own module so that the Kubernetes API
// packages stay out of fleetd's go.mod; .ci/run runs it.
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// helmBinary finds helm: $FLEETD_HELM, ~/.cache/fleetd/bin/helm (where
// .ci/run installs it), or PATH.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLEETD_HELM"); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := filepath.Join(home, ".cache", "fleetd", "bin", "helm"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Skip("helm not found ($FLEETD_HELM, ~/.cache/fleetd/bin/helm or PATH); .ci/run installs it")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// render runs helm template with the chart's values plus extra value files.
func render(t *testing.T, valueFiles ...string) []byte {
	t.Helper()
	args := []string{"template", "qa", "./fleetd", "--namespace", "fleetd", "--kube-version", "1.31.0"}
	for _, f := range valueFiles {
		args = append(args, "-f", f)
	}
	cmd := exec.Command(helmBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// object is one decoded manifest.
type object struct {
	kind, name string
	pod        *corev1.PodSpec // for workloads
	value      any
}

// decode splits a rendered stream and decodes each document strictly into
// its API type: an unknown field, a wrong type or an unknown kind fails.
func decode(t *testing.T, stream []byte) []object {
	t.Helper()
	var out []object
	for _, doc := range bytes.Split(stream, []byte("\n---")) {
		doc = bytes.TrimSpace(doc)
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("manifest does not parse: %v\n%s", err, doc)
		}
		var v any
		var pod *corev1.PodSpec
		switch head.APIVersion + "/" + head.Kind {
		case "batch/v1/CronJob":
			cj := &batchv1.CronJob{}
			v, pod = cj, &cj.Spec.JobTemplate.Spec.Template.Spec
		case "apps/v1/Deployment":
			d := &appsv1.Deployment{}
			v, pod = d, &d.Spec.Template.Spec
		case "v1/ConfigMap":
			v = &corev1.ConfigMap{}
		case "v1/PersistentVolumeClaim":
			v = &corev1.PersistentVolumeClaim{}
		case "v1/Service":
			v = &corev1.Service{}
		case "networking.k8s.io/v1/NetworkPolicy":
			v = &networkingv1.NetworkPolicy{}
		default:
			t.Fatalf("unexpected kind %s %s in the chart", head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, v); err != nil {
			t.Fatalf("%s %s does not decode strictly: %v", head.Kind, head.Metadata.Name, err)
		}
		out = append(out, object{kind: head.Kind, name: head.Metadata.Name, pod: pod, value: v})
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// TestChart renders the chart with its defaults and with two targets, and
// checks the promises docs/architecture.md makes about it.
func TestChart(t *testing.T) {
	two := filepath.Join(t.TempDir(), "two.yaml")
	os.WriteFile(two, []byte(`
targets:
  - name: alpha
    target: {registry: "0x0000000000000000000000000000000000000001", faces: "https://a.example/{name}/", call: "https://a.example/call", fetch_allow: ["a.example:443"]}
    specialists: {security: {schedule: "*/5 * * * *"}, fuzz: {schedule: "*/20 * * * *"}}
  - name: beta
    target: {registry: "0x0000000000000000000000000000000000000002", faces: "https://b.example/{name}/", call: "https://b.example/call", fetch_allow: ["b.example:443"]}
    specialists: {ux: {schedule: "0 * * * *"}}
networkPolicy:
  consoleFrom: [{namespaceSelector: {matchLabels: {team: qa}}}]
`), 0o600)
	for _, tc := range []struct {
		name     string
		values   []string
		cronJobs int // probe CronJobs
		console  int // the daemon policy's ingress rules: one with consoleFrom, none by default
	}{
		{"defaults", nil, 4, 0},
		{"two targets", []string{two}, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := decode(t, render(t, tc.values...))
			kinds := map[string]int{}
			probes := 0
			for _, o := range objs {
				kinds[o.kind]++
				if cj, ok := o.value.(*batchv1.CronJob); ok {
					checkCronJob(t, cj)
					if cj.Labels["app.kubernetes.io/component"] == "probe" {
						probes++
					}
				}
				if d, ok := o.value.(*appsv1.Deployment); ok {
					if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
						t.Errorf("deployment %s: want one replica, Recreate (it owns its data dir)", d.Name)
					}
					if !mountsPVC(d.Spec.Template.Spec, "/var/lib/fleetd") {
						t.Errorf("deployment %s: the data dir is not on a PVC", d.Name)
					}
				}
				if o.pod != nil {
					checkPod(t, o.kind+" "+o.name, o.pod)
				}
			}
			if probes != tc.cronJobs {
				t.Errorf("%d probe CronJobs, want %d (one per specialist and target)", probes, tc.cronJobs)
			}
			for _, k := range []string{"CronJob", "Deployment", "ConfigMap", "NetworkPolicy", "Service", "PersistentVolumeClaim"} {
				if kinds[k] == 0 {
					t.Errorf("no %s rendered", k)
				}
			}
			checkPolicies(t, objs)
			console := 0
			for _, o := range objs {
				if p, ok := o.value.(*networkingv1.NetworkPolicy); ok && p.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] == "daemon" {
					console += len(p.Spec.Ingress)
				}
			}
			if console != tc.console {
				t.Errorf("the daemon's policy has %d ingress rules, want %d", console, tc.console)
			}
			checkConfigs(t, objs)
		})
	}
}

func checkCronJob(t *testing.T, cj *batchv1.CronJob) {
	t.Helper()
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("CronJob %s: concurrencyPolicy %q, want Forbid", cj.Name, s.ConcurrencyPolicy)
	}
	if s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds <= 0 {
		t.Errorf("CronJob %s: no startingDeadlineSeconds", cj.Name)
	}
	js := s.JobTemplate.Spec
	if js.ActiveDeadlineSeconds == nil || js.PodFailurePolicy == nil {
		t.Errorf("CronJob %s: no activeDeadlineSeconds or podFailurePolicy", cj.Name)
	}
	if js.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("CronJob %s: restartPolicy %q, want Never (podFailurePolicy needs it)", cj.Name, js.Template.Spec.RestartPolicy)
	}
	// Exit 2 (configuration) must fail the Job at once, not retry.
	fails2 := false
	for _, r := range js.PodFailurePolicy.Rules {
		if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil {
			for _, v := range r.OnExitCodes.Values {
				fails2 = fails2 || v == 2
			}
		}
	}
	if !fails2 {
		t.Errorf("CronJob %s: exit status 2 (configuration error) does not fail the Job", cj.Name)
	}
}

// checkPod: the hardening of configs/fleetd.service, limits everywhere, keys
// only from a Secret mounted read-only, no secret in an env literal.
func checkPod(t *testing.T, what string, pod *corev1.PodSpec) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod must run as non-root with seccomp RuntimeDefault", what)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: the service account token is mounted (fleetd needs no API access)", what)
	}
	secretVolumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secretVolumes[v.Name] = true
			if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o077 > 0o040 {
				t.Errorf("%s: secret volume %s is readable beyond owner and group", what, v.Name)
			}
		}
	}
	for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
		cs := c.SecurityContext
		if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
			cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
			cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: container %s lacks readOnlyRootFilesystem, no privilege escalation or drop ALL", what, c.Name)
		}
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s: container %s has no CPU and memory limits and requests", what, c.Name)
		}
		for _, e := range c.Env {
			if e.Value != "" && looksSecret(e.Name, e.Value) {
				t.Errorf("%s: container %s has a secret in env %s", what, c.Name, e.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			if secretVolumes[m.Name] && !m.ReadOnly {
				t.Errorf("%s: container %s mounts secret %s writable", what, c.Name, m.Name)
			}
		}
	}
}

func looksSecret(name, value string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "token") || strings.Contains(n, "secret") || strings.Contains(n, "password") ||
		len(strings.TrimPrefix(value, "0x")) == 64
}

func mountsPVC(pod corev1.PodSpec, path string) bool {
	pvc := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			pvc[v.Name] = true
		}
	}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == path && pvc[m.Name] {
				return true
			}
		}
	}
	return false
}

// checkPolicies: every fleetd pod is selected by a policy that denies
// ingress (the console aside) and limits egress.
func checkPolicies(t *testing.T, objs []object) {
	t.Helper()
	var pols []*networkingv1.NetworkPolicy
	for _, o := range objs {
		if p, ok := o.value.(*networkingv1.NetworkPolicy); ok {
			pols = append(pols, p)
		}
	}
	for _, o := range objs {
		if o.pod == nil {
			continue
		}
		var labels map[string]string
		switch v := o.value.(type) {
		case *batchv1.CronJob:
			labels = v.Spec.JobTemplate.Spec.Template.Labels
		case *appsv1.Deployment:
			labels = v.Spec.Template.Labels
		}
		covered := false
		for _, p := range pols {
			match := true
			for k, want := range p.Spec.PodSelector.MatchLabels {
				match = match && labels[k] == want
			}
			if !match {
				continue
			}
			covered = true
			if len(p.Spec.Egress) == 0 {
				t.Errorf("policy %s allows no egress at all (not even DNS)", p.Name)
			}
			for _, e := range p.Spec.Egress {
				if len(e.To) == 0 && (len(e.Ports) == 0 || e.Ports[0].Port.IntValue() != 53) {
					t.Errorf("policy %s: an egress rule to anywhere on %v", p.Name, e.Ports)
				}
			}
			if labels["app.kubernetes.io/component"] != "daemon" && len(p.Spec.Ingress) != 0 {
				t.Errorf("policy %s admits ingress to %s", p.Name, o.name)
			}
			for _, in := range p.Spec.Ingress { // the daemon's: the console port, from named peers only
				if len(in.From) == 0 || len(in.Ports) != 1 || in.Ports[0].Port.IntValue() != 8787 {
					t.Errorf("policy %s: an ingress rule from %v on %v, want TCP 8787 from consoleFrom's peers", p.Name, in.From, in.Ports)
				}
			}
		}
		if !covered {
			t.Errorf("%s %s: no NetworkPolicy selects its pods", o.kind, o.name)
		}
	}
}

// checkConfigs: every rendered fleetd config is one fleetd itself accepts
// (`fleetd config validate`, strict), with keys under the imported 0600 dir.
func checkConfigs(t *testing.T, objs []object) {
	t.Helper()
	bin := fleetdBinary(t)
	dir := t.TempDir()
	for _, o := range objs {
		cm, ok := o.value.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		for name, body := range cm.Data {
			if !strings.Contains(body, "fleet_key_file: /var/run/fleetd/keys/fleet.key") {
				t.Errorf("config %s does not read the imported fleet key", name)
			}
			p := filepath.Join(dir, name)
			os.WriteFile(p, []byte(body), 0o600)
			out, err := exec.Command(bin, "config", "validate", "--config", p).CombinedOutput()
			if err != nil {
				t.Errorf("fleetd config validate %s: %v\n%s\n%s", name, err, out, body)
			}
		}
	}
}

var builtFleetd string

// fleetdBinary builds fleetd from the enclosing repository once.
func fleetdBinary(t *testing.T) string {
	t.Helper()
	if builtFleetd != "" {
		return builtFleetd
	}
	out := filepath.Join(os.TempDir(), fmt.Sprintf("fleetd-chart-test-%d", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", out, "./cmd/fleetd")
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fleetd: %v\n%s", err, b)
	}
	builtFleetd = out
	return out
}

// TestChartDial: at observe (the default) probe pods have no dial init
// container; at exercise every probe pod sets the dial in its data dir
// before fleetd runs, with its own target's config; a value that is no rung
// fails the render with a message naming it.
func TestChartDial(t *testing.T) {
	dialInit := func(objs []object) (withDial, probes int) {
		for _, o := range objs {
			cj, ok := o.value.(*batchv1.CronJob)
			if !ok || cj.Labels["app.kubernetes.io/component"] != "probe" {
				continue
			}
			probes++
			spec := cj.Spec.JobTemplate.Spec.Template.Spec
			for i, c := range spec.InitContainers {
				if c.Name != "dial" {
					continue
				}
				withDial++
				target := cj.Labels["fleetd.qafleet.dev/target"]
				want := []string{"dial", "set", "exercise", "--reason", "helm value dial of release qa", "--config", "/etc/fleetd/" + target + ".yaml"}
				if strings.Join(c.Args, " ") != strings.Join(want, " ") {
					t.Errorf("%s: dial args %q, want %q", cj.Name, c.Args, want)
				}
				if i != len(spec.InitContainers)-1 {
					t.Errorf("%s: the dial init container is not last (the keys must be in place first)", cj.Name)
				}
				data := false
				for _, m := range c.VolumeMounts {
					data = data || (m.Name == "data" && m.MountPath == "/var/lib/fleetd" && !m.ReadOnly)
				}
				if !data {
					t.Errorf("%s: the dial init container does not mount the data dir writable", cj.Name)
				}
			}
		}
		return withDial, probes
	}
	if n, probes := dialInit(decode(t, render(t))); n != 0 || probes == 0 {
		t.Errorf("observe: %d dial init containers in %d probe CronJobs, want none", n, probes)
	}
	ex := filepath.Join(t.TempDir(), "exercise.yaml")
	os.WriteFile(ex, []byte("dial: exercise\n"), 0o600)
	objs := decode(t, render(t, ex))
	if n, probes := dialInit(objs); n != probes || probes == 0 {
		t.Errorf("exercise: %d dial init containers in %d probe CronJobs, want one each", n, probes)
	}
	for _, o := range objs {
		if o.pod != nil {
			checkPod(t, o.kind+" "+o.name, o.pod)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("dial: yolo\n"), 0o600)
	cmd := exec.Command(helmBinary(t), "template", "qa", "./fleetd", "--kube-version", "1.31.0", "-f", bad)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `dial: "yolo" is not a rung`) {
		t.Errorf("dial: yolo rendered (err %v): %s", err, tail(string(out)))
	}
}

func tail(s string) string {
	if len(s) > 800 {
		return s[len(s)-800:]
	}
	return s
}
