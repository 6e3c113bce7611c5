package browser

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A fleetd process killed outright (SIGKILL, the OOM killer) cannot remove
// its jails. Its bwrap dies with it (Pdeathsig) and takes the jail's pid
// namespace along (--die-with-parent), except in one window: a bwrap child
// that has not yet set its own parent-death signal waits on an eventfd for
// the parent that just died, forever (containers/bubblewrap#633; seen in
// CI after the crash-safety tests). Its temporary jail directory stays too,
// with Chromium's profile in it. So every jail records its owner, and the
// next jail a fleetd process plans sweeps the jails whose owner is gone.
// One jail directory has one owner at a time: a run's own jail dir, or a
// fresh temporary one. The file is in the jail's one writable place: a
// browser that rewrites it can get at most its own jail swept.

// ownerFile, in a jail directory, names the process that planned the jail:
// its pid and its start time (clock ticks after boot, /proc/PID/stat's
// field 22), so a pid the kernel reused is not taken for the owner.
const ownerFile = ".fleetd-owner"

// tempJailPrefix starts the names of temporary jail directories.
const tempJailPrefix = "fleetd-browser-jail-"

// procStart is process pid's start time (field 22), or "" when it is not
// running (a zombie is not).
func procStart(pid int) string {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil || zombie(st) {
		return ""
	}
	if f := statFields(st); len(f) >= 20 {
		return string(f[19])
	}
	return ""
}

// writeOwner records this process as dir's owner.
func writeOwner(dir string) error {
	pid := os.Getpid()
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %s\n", pid, procStart(pid)), 0o600)
}

// ownerGone reports whether dir's owner file names a process that is no
// longer running. No file (a directory of a fleetd without owners, or one
// being made) or one that does not parse is not known to be gone.
func ownerGone(dir string) (pid int, gone bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, procStart(pid) != f[1]
}

// insideOf is where dir is mounted in its jail: a path of its own, so the
// directories around it are not.
func insideOf(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "/jail/" + hex.EncodeToString(sum[:8])
}

// swept says what sweepJails found and did.
type swept struct {
	killed  int      // bwrap processes of dead owners' jails
	removed int      // temporary jail directories of dead owners
	owners  []string // the dead owners' pids
	errs    []string // what could not be done
}

func (s swept) String() string {
	if s.killed == 0 && s.removed == 0 && len(s.errs) == 0 {
		return ""
	}
	msg := fmt.Sprintf("swept the jails of %s %s, killed before it could: %d bwrap %s killed, %d temporary jail %s removed",
		plural(len(s.owners), "fleetd process", "fleetd processes"), strings.Join(s.owners, ", "),
		s.killed, plural(s.killed, "process", "processes"), s.removed, plural(s.removed, "directory", "directories"))
	if len(s.errs) > 0 {
		msg += " (could not: " + strings.Join(s.errs, "; ") + ")"
	}
	return msg
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sweepJails kills the bwrap processes of jails whose owner is gone (a
// process whose arguments mount a directory at its own jail path, the
// signature argv gives every jail, and whose directory names a dead
// owner), then removes the temporary jail directories in tmp whose owner
// is gone. It never touches a jail whose owner is running, or one with no
// owner file.
func sweepJails(tmp string) swept {
	var s swept
	owners := map[int]bool{}
	note := func(pid int) {
		if !owners[pid] {
			owners[pid] = true
			s.owners = append(s.owners, strconv.Itoa(pid))
		}
	}
	for dir, pids := range jailProcesses() {
		owner, gone := ownerGone(dir)
		if !gone {
			continue
		}
		note(owner)
		for _, pid := range pids {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
				s.errs = append(s.errs, fmt.Sprintf("kill %d: %v", pid, err))
				continue
			}
			s.killed++
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, tempJailPrefix+"*"))
	for _, dir := range dirs {
		owner, gone := ownerGone(dir)
		if !gone {
			continue
		}
		note(owner)
		if err := os.RemoveAll(dir); err != nil {
			s.errs = append(s.errs, fmt.Sprintf("remove %s: %v", dir, err))
			continue
		}
		s.removed++
	}
	return s
}

// jailProcesses are the processes of every jail on the machine but this
// process, by jail directory: those whose arguments mount a directory at
// its own jail path, the signature argv gives every jail (the bwrap
// started and the pid 1 of its namespace).
func jailProcesses() map[string][]int {
	out := map[string][]int{}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if dir := jailOfArgs(strings.Split(string(cmdline), "\x00")); dir != "" {
			out[dir] = append(out[dir], pid)
		}
	}
	return out
}

// jailOfArgs is the jail directory a bwrap command line mounts ("--bind",
// dir, insideOf(dir)), or "".
func jailOfArgs(args []string) string {
	for i := 0; i+2 < len(args); i++ {
		if args[i] == "--bind" && args[i+2] == insideOf(args[i+1]) {
			return args[i+1]
		}
	}
	return ""
}
