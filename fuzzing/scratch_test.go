package fuzzing

import (
	"fmt"
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
//
// It needs ramRoot to be a tmpfs with a few MiB free, not the 1 GiB fleetd
// asks for (a container's /dev/shm is 64 MiB by default): the floor is
// lowered for the test, and checked on its own below.
func TestRAMScratch(t *testing.T) {
	var st syscall.Statfs_t
	err := syscall.Statfs(ramRoot, &st)
	free := int64(st.Bavail) * st.Bsize
	if err != nil || st.Type != tmpfsMagic || free < 4<<20 {
		why := fmt.Sprintf("%s is not a tmpfs with 4 MiB free here (statfs: %v, type %#x, %d bytes free)", ramRoot, err, st.Type, free)
		if os.Getenv("CI") != "" {
			t.Fatal(why + ": every Linux CI machine has one")
		}
		t.Skip(why)
	}
	old := ramMinFree
	t.Cleanup(func() { ramMinFree = old })
	// Above what is free: no scratch, however small.
	ramMinFree = free + 1<<30
	if dir, release := RAMScratch(1); dir != "" {
		release()
		t.Fatalf("a scratch on %s with %d bytes free, below the floor of %d: %s", ramRoot, free, ramMinFree, dir)
	}
	ramMinFree = 1 << 20
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
