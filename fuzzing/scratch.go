package fuzzing

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ramRoot is where RAM scratch directories are made: Linux's POSIX shared
// memory mount, a tmpfs on every mainstream distribution.
var ramRoot = "/dev/shm"

const (
	tmpfsMagic   = 0x01021994
	ramPrefix    = "fleetd-fuzz-"
	ramShareFree = 4 // a scratch's expected size is at most 1/ramShareFree of ramRoot's free space
)

// ramMinFree is the free space, in bytes, ramRoot must have before a
// scratch is made there (a variable so tests can run on a small tmpfs: a
// container's /dev/shm is 64 MiB by default).
var ramMinFree int64 = 1 << 30

// RAMScratch makes a directory on ramRoot for an engine's working files
// when ramRoot is a tmpfs with at least 1 GiB free and need (the bytes the
// caller expects to write) is at most a quarter of what is free; else it
// returns "". release removes the directory (a no-op for ""). An engine
// writes, renames and deletes a file there for every input it keeps or
// shrinks: on this machine's ext4 that cost libFuzzer 17–20 % of its
// inputs per CPU-second (BENCHMARKS.md, issue 21). The name holds this
// process's id, so a directory left by a process that died is removed by
// the next call.
func RAMScratch(need int64) (dir string, release func()) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(ramRoot, &st); err != nil || int64(st.Type) != tmpfsMagic {
		return "", func() {}
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < ramMinFree || need > free/ramShareFree {
		return "", func() {}
	}
	sweepRAM()
	dir, err := os.MkdirTemp(ramRoot, ramPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", func() {}
	}
	return dir, func() { os.RemoveAll(dir) }
}

// sweepRAM removes the scratch directories of processes that no longer
// run (a fleetd killed mid-session): RAM is not given back otherwise.
func sweepRAM() {
	dirs, _ := filepath.Glob(filepath.Join(ramRoot, ramPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), ramPrefix), "-", 2)[0])
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}

// dirBytes is the size of the regular files directly in dir.
func dirBytes(dir string) int64 {
	entries, _ := os.ReadDir(dir)
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}
