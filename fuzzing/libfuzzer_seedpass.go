package fuzzing

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The seed pass. libFuzzer runs every input of its corpus directory once
// before it mutates anything (INITED), and a target with thousands of
// seeds spends a short session there: klauspost/compress's flate
// FuzzEncoding runs its 2,394 seeds through every compression level, at
// about 22 inputs per CPU-second under libFuzzer's comparison tracing
// (BENCHMARKS.md, "seed pass"), so a 30 s session never reached a
// mutation, and a -merge=1 pass before it ran every seed twice. A session
// therefore starts its workers on a bounded first batch (the smallest
// inputs, which build coverage fastest per CPU-second, and which is
// libFuzzer's own order) and feeds the rest, smallest first, into the
// workers' corpus directory in small batches while they fuzz: libFuzzer
// rereads that directory every second (-reload=1) and runs what is new
// between mutations. Every staged input is run at most once per worker,
// mutation starts within seconds, and what the session's time did not
// reach is said in its note.

// Bounds of the first batch and of each batch fed after it. The cost of
// an input is mostly the target's fixed work, not its size: compress's 64
// smallest seeds (121 bytes on average) took 28 ms of CPU each, as every
// compression level resets its tables. So the batches are bounded in
// count as well as bytes, and the fed batches follow the target's pace
// (feeder.run).
const (
	firstPassInputs = 64
	firstPassBytes  = 64 << 10
	feedMinInputs   = 8
	feedMaxInputs   = 1024
	feedInputBytes  = 2 << 10 // bytes a batch may hold per input of its count, at least firstPassBytes
)

// feedEvery is the wait before the first fed batch (a variable for the
// tests); feedWait the longest wait for libFuzzer to read a batch before
// the next is fed anyway (a file system that does not keep access times).
var (
	feedEvery = 2 * time.Second
	feedWait  = 15 * time.Second
)

// stagedInput is one staged input file.
type stagedInput struct {
	name string
	size int64
}

// splitSeedPass moves the staged inputs of dir past the first batch (the
// smallest first, at most firstPassInputs of at most firstPassBytes in
// all, at least one) into deferred, and returns them in the order to feed
// them (smallest first) and the largest staged input's size.
func splitSeedPass(dir, deferred string) ([]stagedInput, int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("libfuzzer seed pass: %w", err)
	}
	var all []stagedInput
	var largest int64
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		all = append(all, stagedInput{e.Name(), info.Size()})
		largest = max(largest, info.Size())
	}
	slices.SortFunc(all, func(a, b stagedInput) int {
		return cmp.Or(cmp.Compare(a.size, b.size), strings.Compare(a.name, b.name))
	})
	var bytes int64
	first := 0
	for first < len(all) && first < firstPassInputs && (first == 0 || bytes+all[first].size <= firstPassBytes) {
		bytes += all[first].size
		first++
	}
	rest := all[first:]
	if len(rest) == 0 {
		return nil, largest, nil
	}
	if err := os.MkdirAll(deferred, 0o700); err != nil {
		return nil, 0, fmt.Errorf("libfuzzer seed pass: %w", err)
	}
	for _, in := range rest {
		if err := os.Rename(filepath.Join(dir, in.name), filepath.Join(deferred, in.name)); err != nil {
			return nil, 0, fmt.Errorf("libfuzzer seed pass: %w", err)
		}
	}
	return rest, largest, nil
}

// feeder moves deferred inputs into the workers' corpus directory while a
// round runs, one batch at a time: the next when libFuzzer has read the
// last (its access time moved), so a reread never finds a pile of
// batches the clock queued while a slow target ran the last one (a
// compress session was fed 2,035 inputs in its 30 s and sat in one
// reread). A batch read soon after it was fed (the target keeps up)
// doubles the next one; one read late (the target is slow, and libFuzzer
// was still running the batch before) halves it.
type feeder struct {
	from, to string
	queue    []stagedInput // not fed yet, in order
	fed      map[string]bool
	// before are the inputs earlier sessions of this round fed
	// (fedStamp); nil = none.
	before map[string]bool
	mu     sync.Mutex
	n      int      // the next batch's count; 0 = feedMinInputs*4
	last   []string // the last batch's files, in to
	lastAt time.Time
	hold   time.Time // no batch before then
	// stamp is the last modification time given to the directory;
	// touched when it was given.
	stamp, touched time.Time
}

// next takes the next batch off the queue: at most f.n inputs of at most
// max(firstPassBytes, f.n*feedInputBytes) in all, at least one.
func (f *feeder) next() []stagedInput {
	if f.n == 0 {
		f.n = feedMinInputs * 4
	}
	limit := max(int64(firstPassBytes), int64(f.n)*feedInputBytes)
	var bytes int64
	n := 0
	for n < len(f.queue) && n < f.n && (n == 0 || bytes+f.queue[n].size <= limit) {
		bytes += f.queue[n].size
		n++
	}
	batch := f.queue[:n]
	f.queue = f.queue[n:]
	return batch
}

// readEpoch is the access time a fed file is given: libFuzzer's read
// moves it (relatime updates an access time older than the modification
// time), which is how the feeder knows the batch was taken.
var readEpoch = time.Unix(1, 0)

// feed moves one batch into the corpus directory. libFuzzer's reread
// lists the directory only when its modification time (in seconds) is
// past the last reread's, and reads the files not older than that: the
// batch and the directory are dated a second ahead, and past the last
// stamp, so a batch written in the second of the last reread is not
// passed over (fed within a second of the last batch, it was, until
// libFuzzer's own writes happened to move the directory on).
func (f *feeder) feed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	batch := f.next()
	if len(batch) == 0 {
		return nil
	}
	stamp := f.nextStamp(time.Now())
	f.last = f.last[:0]
	for _, in := range batch {
		dst := filepath.Join(f.to, in.name)
		if err := os.Rename(filepath.Join(f.from, in.name), dst); err != nil {
			return fmt.Errorf("libfuzzer seed pass: %w", err)
		}
		os.Chtimes(dst, readEpoch, stamp)
		f.fed[in.name] = true
		f.last = append(f.last, dst)
	}
	f.lastAt = time.Now()
	return os.Chtimes(f.to, stamp, stamp)
}

// nextStamp is the next modification time to give the directory: a
// second ahead of now, and a second past the last one given.
func (f *feeder) nextStamp(now time.Time) time.Time {
	s := now.Add(time.Second)
	if !f.stamp.IsZero() {
		s = later(s, f.stamp.Add(time.Second))
	}
	f.stamp, f.touched = s, now
	return s
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// restampAfter is how long an unread batch waits before its directory is
// dated again: libFuzzer writing a new input of its own into the
// directory dates it to the present, behind the stamp its last reread
// recorded, and that reread then skips the directory, batch and all.
const restampAfter = 1500 * time.Millisecond

// taken reports whether the next batch may be fed: libFuzzer has read the
// last (its last file's access time moved: libFuzzer reads a whole reread
// before it runs any), and the mutation time owed after a late read has
// passed. It adapts the next batch's size to how long the read took.
func (f *feeder) taken(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.last) == 0 {
		return !now.Before(f.hold)
	}
	late := now.Sub(f.lastAt)
	info, err := os.Stat(f.last[len(f.last)-1])
	read := err != nil // gone: libFuzzer reduced it away
	if err == nil {
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			read = time.Unix(st.Atim.Unix()).After(readEpoch)
		}
	}
	// libFuzzer rereads a second after it ran the last reread: a batch
	// read within 1.5 s of being fed found the fuzzer mutating, one read
	// after 2.5 s waited for the last batch to run.
	switch {
	case read && late < 1500*time.Millisecond:
		f.n = min(f.n*2, feedMaxInputs)
	case read && late > 2500*time.Millisecond:
		f.n = max(f.n/2, feedMinInputs)
	case !read && late < feedWait:
		if now.Sub(f.touched) >= restampAfter {
			s := f.nextStamp(now)
			os.Chtimes(f.to, s, s)
		}
		return false
	}
	f.last = f.last[:0]
	// A batch read late waited for the one before it to run (the wait
	// past libFuzzer's 1 s between rereads is about that batch's run
	// time): as long again goes to mutation before the next is fed, so a
	// slow target's seeds take at most about half its time.
	if read {
		f.hold = now.Add(max(0, late-1500*time.Millisecond))
	}
	return !now.Before(f.hold)
}

// left is how many inputs have not been fed.
func (f *feeder) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// run feeds the first batch after feedEvery and each next one once the
// last was taken, until stop is closed or the queue is empty; it returns
// the first error, after stop.
func (f *feeder) run(stop <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		select {
		case <-stop:
			done <- nil
			return
		case <-time.After(feedEvery):
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for f.left() > 0 {
			if f.taken(time.Now()) {
				if err := f.feed(); err != nil {
					done <- err
					return
				}
			}
			select {
			case <-stop:
				done <- nil
				return
			case <-t.C:
			}
		}
		done <- nil
	}()
	return done
}

// fedStamp, in the kept corpus's directory, lists the deferred inputs
// earlier sessions fed (one name a line), so the next session feeds the
// others first: a short session reaches only the first few hundred, and
// in the same order every time the largest seeds would never run.
const fedStamp = ".seedpass-fed"

// readFedBefore reads fedStamp; nil when there is none.
func readFedBefore(kept string) map[string]bool {
	b, err := os.ReadFile(filepath.Join(kept, fedStamp))
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, name := range strings.Fields(string(b)) {
		out[name] = true
	}
	return out
}

// fedLast orders the deferred inputs that earlier sessions of the round
// did not feed first (each part smallest first, as it was) and returns
// the round's record; when every one was fed, a new round starts: the
// order is as it was and the record empty.
func fedLast(rest []stagedInput, before map[string]bool) ([]stagedInput, map[string]bool) {
	var fresh, again []stagedInput
	for _, in := range rest {
		if before[in.name] {
			again = append(again, in)
		} else {
			fresh = append(fresh, in)
		}
	}
	if len(fresh) == 0 {
		return rest, nil
	}
	return append(fresh, again...), before
}

// writeFedBefore records what the round has fed: the earlier sessions'
// inputs that are still deferred, and this session's.
func writeFedBefore(kept string, f *feeder) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := maps.Clone(f.fed)
	for _, in := range f.queue {
		if f.before[in.name] {
			names[in.name] = true
		}
	}
	text := strings.Join(slices.Sorted(maps.Keys(names)), "\n") + "\n"
	if err := writeAtomic(filepath.Join(kept, fedStamp), []byte(text)); err != nil {
		return fmt.Errorf("libfuzzer seed pass: %w", err)
	}
	return nil
}
