package fuzzing

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestRAMScratch: a scratch is made only on a tmpfs with room, removed by
// its release, and a dead process's scratch is swept while a live one's
// stays.
func TestRAMScratch(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(ramRoot, &st); err != nil || st.Type != tmpfsMagic || int64(st.Bavail)*st.Bsize < ramMinFree {
		t.Skipf("%s is not a tmpfs with 1 GiB free here", ramRoot)
	}
	dir, release := RAMScratch(1 << 20)
	if dir == "" {
		t.Fatalf("no scratch on %s", ramRoot)
	}
	if filepath.Dir(dir) != ramRoot {
		t.Fatalf("scratch %s is not on %s", dir, ramRoot)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("release left %s: %v", dir, err)
	}
	if dir, release := RAMScratch(int64(st.Bavail) * st.Bsize); dir != "" {
		release()
		t.Fatalf("a scratch for all of %s's free space was made: %s", ramRoot, dir)
	}
}

func TestRAMScratchNotOnDisk(t *testing.T) {
	old := ramRoot
	ramRoot = t.TempDir()
	t.Cleanup(func() { ramRoot = old })
	if dir, release := RAMScratch(0); dir != "" {
		release()
		t.Fatalf("a scratch on a disk directory: %s", dir)
	}
}

func TestSweepRAM(t *testing.T) {
	old := ramRoot
	ramRoot = t.TempDir()
	t.Cleanup(func() { ramRoot = old })
	// A process that has exited: its pid is free (until reused, which
	// within this test it is not likely to be).
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(ramRoot, ramPrefix+strconv.Itoa(cmd.Process.Pid)+"-1")
	live := filepath.Join(ramRoot, ramPrefix+strconv.Itoa(os.Getpid())+"-2")
	other := filepath.Join(ramRoot, "someone-else")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "corpus"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepRAM()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead process's scratch is still there: %v", err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
