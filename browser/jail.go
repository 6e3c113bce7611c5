package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// The renderer is jailed like every other tool (issue 30): Chromium runs
// inside bubblewrap (bwrap) in a fresh mount namespace where only what it
// needs is visible read-only (/usr, the /lib links, fonts, its /etc files),
// the run's jail directory is its home, profile and only writable place,
// /proc is its own (a new pid namespace), /dev is minimal and /dev/shm and
// /tmp are private and bounded; the key files and the data dir are not
// mounted at all. Inside, Chromium runs as an unprivileged uid of a user
// namespace, which lets it turn its own sandbox on (seccomp-bpf and
// namespaces for the renderers) even when fleetd runs as root. prlimit(1)
// gives the whole tree the sandbox's rlimits. The network namespace is
// shared: Chromium must reach this package's proxy on loopback, and the
// proxy enforces the allowlist.

// ErrNoJail wraps every reason the jail cannot be built or does not hold:
// the renderer then refuses to start (unless Jail.Off).
var ErrNoJail = errors.New("the browser jail is unavailable")

// Defaults of Jail.
const (
	// DefaultJailMemory caps each browser process's data segment
	// (RLIMIT_DATA): a page that allocates past it gets an allocation
	// failure, not the host's memory.
	DefaultJailMemory = 2 << 30
	// DefaultJailCPU caps each browser process's CPU time (RLIMIT_CPU): the
	// browser process lives as long as its run.
	DefaultJailCPU = 20 * 60
	// DefaultJailFile caps any one file a browser process writes
	// (RLIMIT_FSIZE), as sandbox.Exec does.
	DefaultJailFile = 64 << 20
	// jailShm bounds the private /dev/shm and /tmp (tmpfs, in memory).
	jailShm = 256 << 20
	// jailUID is Chromium's uid inside the jail's user namespace: not 0, so
	// Chromium accepts its own sandbox.
	jailUID = "1000"
)

// Jail configures the jail Chromium runs in (Config.Jail). The zero value
// jails it in a temporary directory.
type Jail struct {
	// Off runs Chromium unjailed, as the daemon's user with the daemon's
	// view of the file system (key files and data dir included) and, as
	// root, without its own sandbox. Only an explicit opt-out
	// (crawl.jail: off) should set it.
	Off bool
	// Dir is the run's jail directory (sandbox.JailDir): Chromium's home,
	// profile and temporary files, and the only place it can write. It is
	// mounted at a path of its own (/jail/<hash of Dir>), so the directories
	// around it (the data dir) are not. "": a fresh directory, removed by
	// Close.
	Dir string
	// Hide names what must stay out of the jail: the key files, the data
	// dir, the config. Nothing outside the system directories is mounted
	// anyway; a hidden path under one of them is masked (an empty file or
	// directory over it), and a Dir holding one is refused. Every start
	// checks from inside the jail that none is readable.
	Hide []string
	// MemoryBytes caps each process's data segment (RLIMIT_DATA; the
	// address space cannot be capped: Chromium reserves over 64 GiB of it
	// for V8's and Oilpan's cages); 0 = DefaultJailMemory.
	MemoryBytes uint64
	// CPUSeconds caps each process's CPU time (RLIMIT_CPU, soft; the hard
	// limit is one second more); 0 = DefaultJailCPU.
	CPUSeconds uint64
	// FileBytes caps any file a process writes (RLIMIT_FSIZE); 0 =
	// DefaultJailFile.
	FileBytes uint64
	// Bwrap is bubblewrap's binary; "" = bwrap on PATH.
	Bwrap string
}

// Protections says what confines a browser's processes: `fleetd doctor`
// prints it and a run's record carries it.
type Protections struct {
	// Jailed: the bwrap jail is on.
	Jailed bool `json:"jailed"`
	// Sandboxed: Chromium's own sandbox is on (it refuses to start without
	// one unless told --no-sandbox, which the jail passes only when the
	// kernel cannot give it the namespaces it needs).
	Sandboxed bool `json:"chromium_sandbox"`
	// Hidden are the paths checked unreadable from inside the jail.
	Hidden []string `json:"hidden,omitempty"`
	// Detail says how, or why not.
	Detail string `json:"detail"`
}

// String is one line for doctor and the run record.
func (p Protections) String() string {
	var b strings.Builder
	if p.Jailed {
		b.WriteString("bwrap jail on")
	} else {
		b.WriteString("bwrap jail OFF")
	}
	if p.Sandboxed {
		b.WriteString(", Chromium sandbox on")
	} else {
		b.WriteString(", Chromium sandbox OFF")
	}
	if p.Jailed && len(p.Hidden) > 0 {
		b.WriteString(", unreadable in it: " + strings.Join(p.Hidden, ", "))
	}
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	return b.String()
}

// jailPlan is one jail, resolved: the programs, the mounts, the limits.
type jailPlan struct {
	bwrap, prlimit string
	dir, inside    string // the jail directory, outside and inside
	tmp            bool   // dir is ours to remove
	swept          swept  // what planning it swept of dead processes' jails
	args           []string
	limits         []string // prlimit's arguments
	limitsText     string   // the same for people
	hide           []string
}

// systemRO are what Chromium needs to see, read-only, when they exist.
var systemRO = []string{"/usr", "/etc/fonts", "/etc/chromium", "/etc/chromium.d", "/etc/ld.so.cache", "/var/cache/fontconfig"}

// plan resolves the jail for the browser exe. It fails with ErrNoJail when
// a program is missing or the configuration would expose a hidden path.
func (j Jail) plan(exe string) (*jailPlan, error) {
	p := &jailPlan{}
	var err error
	if p.bwrap = j.Bwrap; p.bwrap == "" {
		p.bwrap = "bwrap"
	}
	if p.bwrap, err = exec.LookPath(p.bwrap); err != nil {
		return nil, fmt.Errorf("%w: bubblewrap not found (%v): apt-get install bubblewrap", ErrNoJail, err)
	}
	if p.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return nil, fmt.Errorf("%w: prlimit (util-linux) not found: %v", ErrNoJail, err)
	}
	for _, h := range j.Hide {
		if h == "" {
			continue
		}
		a, err := filepath.Abs(h)
		if err != nil {
			return nil, fmt.Errorf("%w: hidden path %s: %v", ErrNoJail, h, err)
		}
		p.hide = append(p.hide, a)
		if r, err := filepath.EvalSymlinks(a); err == nil && r != a {
			p.hide = append(p.hide, r)
		}
	}
	var ro, exes []string
	for _, s := range systemRO {
		if _, err := os.Stat(s); err == nil {
			ro = append(ro, s)
		}
	}
	if exe != "" {
		real, err := filepath.EvalSymlinks(exe)
		if err != nil {
			return nil, fmt.Errorf("%w: browser %s: %v", ErrNoJail, exe, err)
		}
		exes = []string{exe, real}
		for _, e := range exes {
			if d := filepath.Dir(e); !underAny(d, ro) {
				ro = append(ro, d)
			}
		}
	}
	p.swept = sweepJails(os.TempDir())
	if j.Dir == "" {
		if p.dir, err = os.MkdirTemp("", tempJailPrefix); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoJail, err)
		}
		p.tmp = true
	} else if p.dir, err = filepath.Abs(j.Dir); err != nil {
		return nil, fmt.Errorf("%w: jail dir %s: %v", ErrNoJail, j.Dir, err)
	}
	fail := func(err error) (*jailPlan, error) {
		p.remove()
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(p.dir); err == nil {
		p.dir = real
	}
	for _, h := range p.hide {
		if within(h, p.dir) {
			return fail(fmt.Errorf("%w: the jail dir %s holds %s, which must stay out of the jail", ErrNoJail, p.dir, h))
		}
		for _, r := range append(ro, exes...) {
			if within(r, h) {
				return fail(fmt.Errorf("%w: %s must stay out of the jail but holds %s, which the jail shows", ErrNoJail, h, r))
			}
		}
	}
	for _, sub := range []string{"home", "tmp"} {
		if err := os.MkdirAll(filepath.Join(p.dir, "browser", sub), 0o700); err != nil {
			return fail(fmt.Errorf("%w: %v", ErrNoJail, err))
		}
	}
	if err := writeOwner(p.dir); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrNoJail, err))
	}
	p.inside = insideOf(p.dir)

	a := []string{
		"--unshare-user", "--uid", jailUID, "--gid", jailUID,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session",
		// The private mounts first: a read-only mount below /tmp (a browser
		// there) stays visible.
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(jailShm), "--tmpfs", "/dev/shm",
		"--size", strconv.Itoa(jailShm), "--tmpfs", "/tmp",
	}
	for _, r := range ro {
		a = append(a, "--ro-bind", r, r)
	}
	// /bin, /lib, ...: links into /usr on a merged-/usr system, else
	// directories of their own.
	for _, l := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		if t, err := os.Readlink(l); err == nil {
			a = append(a, "--symlink", t, l)
		} else if st, err := os.Stat(l); err == nil && st.IsDir() {
			a = append(a, "--ro-bind", l, l)
		}
	}
	// Mask what must stay hidden where a read-only mount shows it.
	for _, h := range p.hide {
		if !underAny(h, ro) {
			continue
		}
		st, err := os.Stat(h)
		switch {
		case err != nil:
			continue // nothing there to show
		case st.IsDir():
			a = append(a, "--tmpfs", h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	home := p.inside + "/browser/home"
	a = append(a, "--bind", p.dir, p.inside, "--chdir", p.inside,
		"--clearenv", "--setenv", "HOME", home, "--setenv", "TMPDIR", p.inside+"/browser/tmp",
		"--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
		"--setenv", "XDG_CONFIG_HOME", home+"/.config", "--setenv", "XDG_CACHE_HOME", home+"/.cache")
	p.args = a

	mem, cpu, file := orU(j.MemoryBytes, DefaultJailMemory), orU(j.CPUSeconds, DefaultJailCPU), orU(j.FileBytes, DefaultJailFile)
	p.limits = []string{
		fmt.Sprintf("--data=%d:%d", mem, mem),
		fmt.Sprintf("--cpu=%d:%d", cpu, cpu+1),
		fmt.Sprintf("--fsize=%d:%d", file, file),
		"--core=0:0",
	}
	p.limitsText = fmt.Sprintf("each process at most %d MiB of data, %d CPU-seconds, %d MiB per file, no core dump", mem>>20, cpu, file>>20)
	return p, nil
}

func orU(v, d uint64) uint64 {
	if v == 0 {
		return d
	}
	return v
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if within(path, d) {
			return true
		}
	}
	return false
}

// remove deletes what the jail made: the temporary directory, or the
// browser's home, profile and temporary files in the run's jail dir (a
// profile is tens of megabytes and no run artifact).
func (p *jailPlan) remove() {
	switch {
	case p == nil:
	case p.tmp:
		os.RemoveAll(p.dir)
	default:
		os.RemoveAll(filepath.Join(p.dir, "browser"))
		os.Remove(filepath.Join(p.dir, ownerFile))
	}
}

// profile is Chromium's --user-data-dir inside the jail.
func (p *jailPlan) profile() string { return p.inside + "/browser/profile" }

// argv is the command line that runs argv in the jail, under its limits.
func (p *jailPlan) argv(argv ...string) []string {
	out := append([]string{p.prlimit}, p.limits...)
	out = append(out, "--", p.bwrap)
	out = append(out, p.args...)
	out = append(out, "--")
	return append(out, argv...)
}

// probeScript runs in the jail: it names every hidden path that shows any
// content (a masked one is an empty directory or /dev/null), and says
// whether a user namespace with its own pid and network namespaces can be
// made (what Chromium's sandbox needs).
const probeScript = `for p do
  if [ -c "$p" ]; then continue; fi
  if [ -d "$p" ] && [ -z "$(ls -A "$p" 2>/dev/null)" ]; then continue; fi
  if [ -e "$p" ] || [ -L "$p" ]; then echo "visible $p"; fi
done
if [ ! -w . ]; then echo "jail dir not writable"; fi
if unshare --user --pid --net --fork true 2>/dev/null; then echo "userns ok"; else echo "userns no"; fi`

// probe runs probeScript in the jail: an error when the jail cannot start
// or shows a hidden path; else whether Chromium's sandbox can work.
func (p *jailPlan) probe(ctx context.Context) (sandboxOK bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	argv := p.argv(append([]string{"/bin/sh", "-c", probeScript, "sh"}, p.hide...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return false, fmt.Errorf("%w: bwrap could not start a jail (%v): %s", ErrNoJail, err, orWord(msg, "no message"))
	}
	var visible []string
	for line := range strings.Lines(out.String()) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "visible "):
			visible = append(visible, strings.TrimPrefix(line, "visible "))
		case line == "jail dir not writable":
			return false, fmt.Errorf("%w: the jail dir %s is not writable inside the jail", ErrNoJail, p.dir)
		case line == "userns ok":
			sandboxOK = true
		}
	}
	if len(visible) > 0 {
		return false, fmt.Errorf("%w: readable inside the jail: %s", ErrNoJail, strings.Join(visible, ", "))
	}
	return sandboxOK, nil
}

// CheckJail builds the jail j describes for the browser exe and checks it
// from inside, as every browser start does: it fails with ErrNoJail when
// bwrap is missing, cannot make its namespaces, or a hidden path is
// readable in it. It says nothing when j.Off but that the jail is off.
func CheckJail(ctx context.Context, j Jail, exe string) (Protections, error) {
	if j.Off {
		return unjailed(), nil
	}
	p, err := j.plan(exe)
	if err != nil {
		return Protections{}, err
	}
	defer p.remove()
	ok, err := p.probe(ctx)
	if err != nil {
		return Protections{}, err
	}
	return p.protections(ok), nil
}

func unjailed() Protections {
	who := "the daemon's user"
	if os.Getuid() == 0 {
		who = "root"
	}
	return Protections{Detail: "crawl.jail is off: Chromium runs as " + who + " with the daemon's view of the file system, key files and data dir included"}
}

func (p *jailPlan) protections(sandboxOK bool) Protections {
	d := "Chromium runs as uid " + jailUID + " of its own user namespace, sees /usr and its own files read-only, writes only its jail dir; " + p.limitsText
	if !sandboxOK {
		d += "; Chromium's own sandbox is off: no nested user namespace can be made in the jail (kernel or seccomp policy)"
	}
	if w := p.swept.String(); w != "" {
		d += "; " + w
	}
	return Protections{Jailed: true, Sandboxed: sandboxOK, Hidden: p.hide, Detail: d}
}

// jailed is a started browser's jail.
type jailed struct {
	plan *jailPlan
	prot Protections
}

// jailOptions checks the jail and returns the allocator options that run
// Chromium in it (b.mu held, from launch). Jail.Off: none, and the
// protections say so.
func (b *Browser) jailOptions() ([]chromedp.ExecAllocatorOption, error) {
	j := b.cfg.Jail
	if j.Off {
		b.jail = &jailed{prot: unjailed()}
		return nil, nil
	}
	p, err := j.plan(b.cfg.Exec)
	if err != nil {
		return nil, err
	}
	ok, err := p.probe(context.Background())
	if err != nil {
		p.remove()
		return nil, err
	}
	b.jail = &jailed{plan: p, prot: p.protections(ok)}
	return []chromedp.ExecAllocatorOption{
		chromedp.UserDataDir(p.profile()),
		chromedp.Flag("no-sandbox", !ok),
		chromedp.NoInheritEnv,
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			argv := p.argv(append([]string{cmd.Path}, cmd.Args[1:]...)...)
			cmd.Path, cmd.Args = argv[0], argv
			cmd.Env = []string{}
			if cmd.SysProcAttr == nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{}
			}
			cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		}),
	}, nil
}

// dropJail removes a temporary jail directory once the browser is gone.
func (b *Browser) dropJail() {
	if b.jail != nil {
		b.jail.plan.remove()
	}
}

// Protections says what confines this browser's processes. Before
// Chromium started (or when it could not start) nothing is confined yet,
// and Detail says so.
func (b *Browser) Protections() Protections {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.started && b.jail != nil:
		return b.jail.prot
	case b.cfg.Jail.Off:
		return unjailed()
	case b.startErr != nil:
		return Protections{Detail: "Chromium did not start: " + b.startErr.Error()}
	}
	return Protections{Detail: "Chromium not started yet: it will run jailed, or not at all"}
}
