package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// mustJail fails under CI (.ci/run installs bubblewrap) and skips elsewhere
// when bwrap is missing.
func mustJail(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap: %v: .ci/run installs Debian's bubblewrap package for the renderer's jail", err)
		}
		t.Skipf("bwrap: %v: apt-get install -y bubblewrap to run the jail's tests", err)
	}
}

// secretDataDir lays out a data dir as fleetd does (keys/ with 0600 key
// files, qa-sandbox/<run>/fs the jail) with a secret in the key files, and
// returns the data dir, the key files, the jail dir and the secret.
func secretDataDir(t *testing.T) (data string, keys []string, jail, secret string) {
	t.Helper()
	data = t.TempDir()
	secret = "4f3edf983ac636a65a842ce7c78d9aa706d3b113bce9c46f30d7d21715b23b1d" // a key-shaped value
	for _, d := range []string{"keys", "qa-sandbox/r-test-1/fs", "qa-sandbox/r-test-1/keys"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"keys/fleet.key", "keys/sponsor.key", "qa-sandbox/r-test-1/keys/throwaway-0.key"} {
		p := filepath.Join(data, k)
		if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, p)
	}
	return data, keys, filepath.Join(data, "qa-sandbox/r-test-1/fs"), secret
}

// readAsController navigates a fresh tab of the started browser to u over
// the DevTools protocol, past every fence of Render (no allowlist, no
// Fetch domain): what a page that took over the browser process could
// read. It returns the document's text, or the navigation's error.
func readAsController(t *testing.T, b *Browser, u string) (string, error) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.bctx)
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		return "", err
	}
	return chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement ? document.documentElement.outerHTML : ''`))
}

// TestJailHidesKeys: a hostile page tries every way a page has to read the
// key files (file:// images, iframes, objects, stylesheets, scripts,
// fetch, XHR, navigations), with the real key paths; the secret appears
// nowhere in what the render reports. Then the browser itself is driven
// to the key files (file:// navigations over DevTools, past every fence
// of Render: a renderer that escaped to the browser process): jailed, it
// finds nothing there, while the same browser unjailed (the control)
// reads the key, so the check can fail.
func TestJailHidesKeys(t *testing.T) {
	mustJail(t)
	data, keys, jail, secret := secretDataDir(t)
	var tags strings.Builder
	for _, k := range keys {
		u := "file://" + k
		fmt.Fprintf(&tags, `<img src="%[1]s"><iframe src="%[1]s"></iframe><object data="%[1]s"></object><link rel=stylesheet href="%[1]s"><script src="%[1]s"></script><a id=l href="%[1]s">k</a>`, u)
		fmt.Fprintf(&tags, `<script>
fetch(%[1]q).then(r => r.text()).then(t => { document.body.append('fetched ' + t); console.error('fetched ' + t) }).catch(e => console.error('fetch refused'));
try { const x = new XMLHttpRequest(); x.open('GET', %[1]q, false); x.send(); document.body.append('xhr ' + x.responseText) } catch (e) { console.error('xhr refused') }
</script>`, u)
	}
	fmt.Fprintf(&tags, `<script>setTimeout(() => { document.getElementById('l').click(); location.href = %q }, 50)</script>`, "file://"+keys[0])
	s := serve(t, htmlPage(`<!doctype html><html><body>`+tags.String()+`</body></html>`))
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), PageTimeout: 5 * time.Second, Jail: Jail{Dir: jail, Hide: append([]string{data}, keys...)}})
	r := render(t, b, s.URL+"/")
	all, _ := json.Marshal(r)
	refused, _ := json.Marshal(b.Refused())
	if bytes.Contains(all, []byte(secret)) || bytes.Contains(refused, []byte(secret)) {
		t.Errorf("the key's secret reached the render's report:\n%s\n%s", all, refused)
	}
	if !strings.Contains(r.HTML, "<iframe") || len(r.Requests) == 0 {
		t.Errorf("the hostile page did not render: %s", all)
	}
	p := b.Protections()
	if !p.Jailed || !p.Sandboxed || len(p.Hidden) < len(keys)+1 {
		t.Errorf("protections %+v: want the jail and Chromium's sandbox on, %d paths hidden", p, len(keys)+1)
	}
	for _, k := range keys {
		text, err := readAsController(t, b, "file://"+k)
		if strings.Contains(text, secret) {
			t.Errorf("the jailed browser read %s", k)
		}
		if err == nil || !strings.Contains(err.Error(), "ERR_FILE_NOT_FOUND") {
			t.Errorf("navigating the jailed browser to %s: %v, want ERR_FILE_NOT_FOUND", k, err)
		}
	}
	for _, d := range []string{data, filepath.Dir(keys[0])} {
		if text, err := readAsController(t, b, "file://"+d+"/"); err == nil || strings.Contains(text, "key") || strings.Contains(text, "qa-sandbox") {
			t.Errorf("the jailed browser opens %s: %v %s", d, err, text)
		}
	}

	// The control: unjailed, the same browser reads the key.
	open := newBrowser(t, Config{Allow: allowOnly(s.URL), Jail: Jail{Off: true}})
	render(t, open, s.URL+"/")
	if p := open.Protections(); p.Jailed || !strings.Contains(p.String(), "OFF") {
		t.Errorf("unjailed protections: %v", p)
	}
	// (A .key file is a download, application/pgp-keys; its directory's
	// listing shows it is there.)
	if text, err := readAsController(t, open, "file://"+filepath.Dir(keys[0])+"/"); !strings.Contains(text, "sponsor.key") {
		t.Errorf("control: the unjailed browser could not list the keys either (%v): the check above proves nothing", err)
	}
}

// TestJailedProcessView looks at the jail from outside, through each
// Chromium process's own root (/proc/<pid>/root), while a page is open:
// the data dir and the key files do not exist there, the profile does, in
// the jail dir; every Chromium process carries the memory, CPU, file and
// core limits; the renderers run under Chromium's own sandbox (seccomp
// filter, user and network namespaces of their own); and the process
// accounting finds the whole tree, so Close leaves nothing (newBrowser's
// cleanup checks).
func TestJailedProcessView(t *testing.T) {
	mustJail(t)
	data, keys, jail, _ := secretDataDir(t)
	hidden := append([]string{data}, keys...)
	s := serve(t, htmlPage(`<!doctype html><p>hello</p>`))
	const mem = 3 << 30
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), Quiet: 3 * time.Second, Jail: Jail{Dir: jail, Hide: hidden, MemoryBytes: mem}})
	self, _ := os.Readlink("/proc/self/ns/mnt")
	type proc struct {
		pid                  int
		kind, mnt, user, net string
		seccomp              string
		limits               []byte
		sees                 []string // hidden paths that exist in its root
		profile              bool     // its root has the jail's profile
	}
	look := func(pid int, inside string) (proc, bool) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		argv0, _, _ := bytes.Cut(cmd, []byte{0})
		if !bytes.Contains(argv0, []byte("chromium")) {
			return proc{}, false // prlimit/bwrap, the launcher script
		}
		p := proc{pid: pid, kind: "browser"}
		if _, k, ok := bytes.Cut(cmd, []byte("--type=")); ok {
			p.kind = strings.Fields(strings.ReplaceAll(string(k), "\x00", " "))[0]
			p.kind, _, _ = strings.Cut(p.kind, "\x00")
		}
		ns := func(n string) string { l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, n)); return l }
		p.mnt, p.user, p.net = ns("mnt"), ns("user"), ns("net")
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if _, v, ok := bytes.Cut(st, []byte("Seccomp:")); ok {
			p.seccomp = strings.Fields(string(v))[0]
		}
		p.limits, _ = os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
		root := fmt.Sprintf("/proc/%d/root", pid)
		for _, h := range hidden {
			_, err := os.Stat(root + h)
			// A process in Chromium's sandbox has chrooted into a directory
			// that is gone: the kernel answers ESRCH for any path in it.
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) && p.kind != "browser" && alive(pid) {
				continue
			}
			p.sees = append(p.sees, fmt.Sprintf("%s (%v)", h, err))
		}
		_, err := os.Stat(root + inside + "/browser/profile")
		p.profile = err == nil
		return p, true
	}
	// Look while the page is open: its renderer lives as long as the tab.
	var seen []proc
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			b.mu.Lock() // held by Render until the tab is set up
			j := b.jail
			b.mu.Unlock()
			if j == nil {
				continue
			}
			var now []proc
			renderer := false
			for _, pid := range b.processes() {
				if p, ok := look(pid, j.plan.inside); ok && p.mnt != "" {
					now = append(now, p)
					renderer = renderer || p.kind == "renderer" && !bytes.Contains(must(os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))), []byte("top-chrome"))
				}
			}
			if renderer {
				seen = now
				return
			}
		}
	}()
	render(t, b, s.URL+"/")
	<-done
	var browser *proc
	for i, p := range seen {
		if p.kind == "browser" && browser == nil {
			browser = &seen[i]
		}
	}
	if browser == nil {
		t.Fatalf("no browser process found: %+v", seen)
	}
	if !browser.profile {
		t.Errorf("the browser process does not see its profile in the jail")
	}
	renderers := 0
	for _, p := range seen {
		if p.mnt == self {
			t.Errorf("%s process %d shares the daemon's mount namespace", p.kind, p.pid)
		}
		if len(p.sees) > 0 {
			t.Errorf("%s process %d sees %v", p.kind, p.pid, p.sees)
		}
		for _, want := range []string{"Max data size", "Max cpu time", "Max file size"} {
			if !limited(p.limits, want) {
				t.Errorf("%s process %d: %s unlimited:\n%s", p.kind, p.pid, want, p.limits)
			}
		}
		if !bytes.Contains(p.limits, []byte(strconv.Itoa(mem))) {
			t.Errorf("%s process %d: no data limit of %d:\n%s", p.kind, p.pid, mem, p.limits)
		}
		if p.kind != "renderer" {
			continue
		}
		renderers++
		if p.seccomp != "2" {
			t.Errorf("renderer %d: seccomp mode %q, want 2 (Chromium's seccomp-bpf sandbox)", p.pid, p.seccomp)
		}
		if p.user == browser.user || p.net == browser.net {
			t.Errorf("renderer %d shares the browser's user or network namespace: %s %s / %s %s", p.pid, p.user, p.net, browser.user, browser.net)
		}
	}
	if renderers == 0 {
		t.Fatalf("no renderer found: %+v", seen)
	}
}

func must[T any](v T, _ error) T { return v }

// limited reports whether the /proc/<pid>/limits line named name has a
// soft limit.
func limited(limits []byte, name string) bool {
	for line := range strings.Lines(string(limits)) {
		if strings.HasPrefix(line, name) {
			f := strings.Fields(strings.TrimPrefix(line, name))
			return len(f) > 0 && f[0] != "unlimited"
		}
	}
	return false
}

// TestJailRefuses: without bwrap, or with a jail that would show what
// must stay hidden, the browser refuses to render (ErrNoJail, with the
// reason and no process started); the probe that every start runs inside
// the jail finds a hidden path that a mount shows.
func TestJailRefuses(t *testing.T) {
	mustJail(t)
	exe := mustFind(t)
	data, keys, jail, _ := secretDataDir(t)
	s := serve(t, htmlPage(`<p>x</p>`))
	for _, tc := range []struct {
		name string
		jail Jail
		want string
	}{
		{"no bwrap", Jail{Bwrap: "/nonexistent/bwrap", Dir: jail}, "bubblewrap not found"},
		{"jail dir holds a key", Jail{Dir: data, Hide: keys}, "must stay out of the jail"},
		{"a hidden dir holds the browser", Jail{Dir: jail, Hide: []string{filepath.Dir(exe)}}, "which the jail shows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(Config{Exec: exe, Allow: allowOnly(s.URL), Jail: tc.jail})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			_, err = b.Render(context.Background(), s.URL+"/")
			if !errors.Is(err, ErrNoJail) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want ErrNoJail saying %q", err, tc.want)
			}
			if b.PID() != 0 {
				t.Errorf("a browser started: pid %d", b.PID())
			}
			if p := b.Protections(); p.Jailed || !strings.Contains(p.Detail, "did not start") {
				t.Errorf("protections of a browser that did not start: %+v", p)
			}
			if _, err := CheckJail(context.Background(), tc.jail, exe); !errors.Is(err, ErrNoJail) {
				t.Errorf("CheckJail: %v, want ErrNoJail", err)
			}
		})
	}

	// A secret beside a browser outside /usr: the browser's directory is
	// mounted, the secret is masked, and the probe finds it unreadable;
	// without the mask the probe reports it.
	dir := t.TempDir()
	fake := filepath.Join(dir, "chromium")
	secret := filepath.Join(dir, "sponsor.key")
	for _, f := range []string{fake, secret} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	j := Jail{Dir: jail, Hide: []string{secret}}
	p, err := CheckJail(context.Background(), j, fake)
	if err != nil || !p.Jailed {
		t.Fatalf("a masked secret: %+v %v", p, err)
	}
	plan, err := j.plan(fake)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plan.args {
		if plan.args[i] == "/dev/null" && plan.args[i+1] == secret {
			plan.args = append(plan.args[:i-1], plan.args[i+2:]...)
			break
		}
	}
	if _, err := plan.probe(context.Background()); !errors.Is(err, ErrNoJail) || !strings.Contains(err.Error(), "readable inside the jail: "+secret) {
		t.Errorf("the probe without the mask: %v, want it to report %s", err, secret)
	}
}

// TestJailTempDir: without Jail.Dir the jail is a temporary directory
// that Close removes, Chromium's profile included.
func TestJailTempDir(t *testing.T) {
	mustJail(t)
	s := serve(t, htmlPage(`<p>x</p>`))
	b := newBrowser(t, Config{Allow: allowOnly(s.URL)})
	render(t, b, s.URL+"/")
	dir := b.jail.plan.dir
	if _, err := os.Stat(filepath.Join(dir, "browser/profile")); err != nil {
		t.Fatalf("no profile in the temporary jail: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary jail %s outlives Close: %v", dir, err)
	}
}

// BenchmarkRenderJail: CPU-seconds of the browser's whole process tree per
// render, jailed and unjailed. cold: start, render one page, close (what a
// run that renders one page pays); warm: b.N pages on one browser, its
// start included once. The tree's CPU is read from /proc just before
// Close: every live process's own time plus what it reaped (renderers of
// closed tabs are reaped by the zygote), since under bwrap the tree is
// killed rather than reaped into this process's RUSAGE_CHILDREN.
func BenchmarkRenderJail(b *testing.B) {
	exe := mustFind(b)
	mustJail(b)
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><title>t</title><div id=app></div><script>for (let i = 0; i < 200; i++) { const p = document.createElement('p'); p.textContent = 'row ' + i; app.appendChild(p) }</script>`))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := srv.URL
	for _, mode := range []struct {
		name string
		jail Jail
	}{{"jailed", Jail{}}, {"unjailed", Jail{Off: true}}} {
		renderOne := func(br *Browser) {
			if _, err := br.Render(context.Background(), s+"/"); err != nil {
				b.Fatal(err)
			}
		}
		closeAll := func(br *Browser) time.Duration {
			cpu := treeCPU(br.processes())
			if err := br.Close(); err != nil {
				b.Fatal(err)
			}
			return cpu
		}
		b.Run(mode.name+"/cold", func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				br, err := New(Config{Exec: exe, Allow: allowOnly(s), Jail: mode.jail})
				if err != nil {
					b.Fatal(err)
				}
				renderOne(br)
				cpu += closeAll(br)
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/render")
		})
		b.Run(mode.name+"/warm", func(b *testing.B) {
			br, err := New(Config{Exec: exe, Allow: allowOnly(s), Jail: mode.jail})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				renderOne(br)
			}
			b.ReportMetric(closeAll(br).Seconds()/float64(b.N), "cpu-s/render")
		})
	}
}

// treeCPU sums utime, stime, cutime and cstime of pids (/proc/<pid>/stat,
// in clock ticks of 10 ms).
func treeCPU(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(st, ')')
		f := strings.Fields(string(st[i+1:]))
		// After the command: state is field 3; utime..cstime are 14..17.
		for _, n := range f[11:15] {
			v, _ := strconv.ParseInt(n, 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// TestSweepJailsOfADeadOwner: jails whose owner process is gone (killed
// before it could remove them) are swept by the next plan: their bwrap
// processes killed, their temporary directories removed; a jail whose owner
// runs, one with no owner file and a directory that is no jail are left.
// The jails are real bwrap jails running sleep; "dead" is an owner file
// naming a process that has exited, and one naming this process's pid with
// another start time (the pid reused).
func TestSweepJailsOfADeadOwner(t *testing.T) {
	mustJail(t)
	root := t.TempDir()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwners := []string{
		fmt.Sprintf("%d %s\n", exited.Process.Pid, "12345"),
		fmt.Sprintf("%d %s\n", os.Getpid(), "1"),
	}
	// start starts a real jail in dir running sleep, its owner file (for
	// now) naming this process. (Planning a jail sweeps: the owners are
	// set once every jail runs.)
	type jail struct {
		dir, owner string // owner: "live" keeps this process's, "" removes it
		cmd        *exec.Cmd
	}
	start := func(dir, owner string) jail {
		t.Helper()
		p, err := Jail{Dir: dir}.plan("")
		if err != nil {
			t.Fatal(err)
		}
		argv := p.argv("/bin/sleep", "600")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return jail{p.dir, owner, cmd}
	}
	mk := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead := []jail{start(mk(tempJailPrefix+"dead0"), deadOwners[0]), start(mk("run-jail-dead1"), deadOwners[1])}
	kept := []jail{start(mk(tempJailPrefix+"live"), "live"), start(mk(tempJailPrefix+"noowner"), "")}
	emptyDead := mk(tempJailPrefix + "empty")
	if err := os.WriteFile(filepath.Join(emptyDead, ownerFile), []byte(deadOwners[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	other := mk("not-a-jail")
	if err := os.WriteFile(filepath.Join(other, ownerFile), []byte(deadOwners[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each jail is two bwrap processes (the one started and the pid 1 of
	// its namespace) once it runs sleep.
	jailProcs := func(dir string) []int { return jailProcesses()[dir] }
	for _, j := range append(append([]jail{}, dead...), kept...) {
		deadline := time.Now().Add(30 * time.Second)
		for len(jailProcs(j.dir)) < 2 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := len(jailProcs(j.dir)); n < 2 {
			t.Fatalf("jail %s: %d bwrap processes, want 2", j.dir, n)
		}
		switch j.owner {
		case "live":
		case "":
			os.Remove(filepath.Join(j.dir, ownerFile))
		default:
			if err := os.WriteFile(filepath.Join(j.dir, ownerFile), []byte(j.owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Killing a jail's first bwrap can take its pid 1 along before the
	// scan reaches it: at least one of each dead jail's two is killed. (The
	// scan is of the whole machine: a test elsewhere that kills a fleetd
	// may have left more.)
	s := sweepJails(root)
	if s.killed < 2 || s.removed != 2 || len(s.errs) != 0 {
		t.Errorf("swept %+v: want at least 2 processes of the 2 dead jails, and 2 temporary dirs", s)
	}
	if msg := s.String(); !strings.Contains(msg, strconv.Itoa(exited.Process.Pid)) || !strings.Contains(msg, "2 temporary jail directories removed") {
		t.Errorf("the sweep says %q", msg)
	}
	for _, j := range dead {
		done := make(chan error, 1)
		go func() { done <- j.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the jail of a dead owner in %s still runs", j.dir)
		}
		// The pid 1 of a jail whose first bwrap was killed dies of that
		// (--die-with-parent), not at once.
		deadline := time.Now().Add(10 * time.Second)
		for len(jailProcs(j.dir)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if pids := jailProcs(j.dir); len(pids) > 0 {
			t.Errorf("jail %s: processes %v outlive the sweep by 10 s", j.dir, pids)
		}
	}
	for _, d := range []string{dead[0].dir, emptyDead} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the temporary jail %s of a dead owner is still there: %v", d, err)
		}
	}
	for _, d := range []string{dead[1].dir, other} { // not temporary jails: kept
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	for _, j := range kept {
		if j.cmd.ProcessState != nil || len(jailProcs(j.dir)) < 2 {
			t.Errorf("the jail in %s (owner running or unknown) was swept", j.dir)
		}
		if _, err := os.Stat(j.dir); err != nil {
			t.Errorf("%s was removed: %v", j.dir, err)
		}
	}
	// A second sweep finds nothing of these left.
	if s := sweepJails(root); s.removed != 0 || slices.Contains(s.owners, strconv.Itoa(exited.Process.Pid)) {
		t.Errorf("a second sweep: %s", s)
	}
}

// BenchmarkSweepJails: what the sweep every jail plan runs costs, with
// nothing to sweep: one pass over /proc (each process's command line) and
// a glob of the temporary directory. It reports the processes it read.
func BenchmarkSweepJails(b *testing.B) {
	root := b.TempDir()
	ents, _ := os.ReadDir("/proc")
	procs := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			procs++
		}
	}
	for b.Loop() {
		sweepJails(root)
	}
	b.ReportMetric(float64(procs), "procs")
}
