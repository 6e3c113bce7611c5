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

// Bounds of the first batch and of each batch fed after it.
// The cost of an input is mostly the target's fixed work, not its size:
// compress's 256 smallest seeds (129 bytes on average) took 6.9
// CPU-seconds, 27 ms each, as every compression level resets its tables.
// So the batches are small in count as well as in bytes.
const (
	firstPassInputs = 64
	firstPassBytes  = 64 << 10
	feedInputs      = 64
	feedBytes       = 64 << 10
)

// feedEvery is the time between two fed batches (a variable for the
// tests): at least libFuzzer's reload interval, so each batch is run
// before the next lands and the workers mutate in between.
var feedEvery = 2 * time.Second

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

// feeder moves deferred inputs into the workers' corpus directory, a
// batch every feedEvery, while a round runs.
type feeder struct {
	from, to string
	queue    []stagedInput // not fed yet, in order
	fed      map[string]bool
	// before are the inputs earlier sessions of this round fed
	// (fedStamp); nil = none.
	before map[string]bool
	mu     sync.Mutex
}

// next takes the next batch off the queue: at most feedInputs inputs of
// at most feedBytes in all, at least one.
func (f *feeder) next() []stagedInput {
	var bytes int64
	n := 0
	for n < len(f.queue) && n < feedInputs && (n == 0 || bytes+f.queue[n].size <= feedBytes) {
		bytes += f.queue[n].size
		n++
	}
	batch := f.queue[:n]
	f.queue = f.queue[n:]
	return batch
}

// feed moves one batch into the corpus directory. libFuzzer's reread
// lists the directory only when its modification time (in seconds) is
// past the last reread's, and reads the files not older than that: the
// batch and the directory are dated a second ahead, so a batch written
// in the second of the last reread is not passed over.
func (f *feeder) feed() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	batch := f.next()
	if len(batch) == 0 {
		return nil
	}
	stamp := time.Now().Add(time.Second)
	for _, in := range batch {
		dst := filepath.Join(f.to, in.name)
		if err := os.Rename(filepath.Join(f.from, in.name), dst); err != nil {
			return fmt.Errorf("libfuzzer seed pass: %w", err)
		}
		os.Chtimes(dst, stamp, stamp)
		f.fed[in.name] = true
	}
	return os.Chtimes(f.to, stamp, stamp)
}

// left is how many inputs have not been fed.
func (f *feeder) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// run feeds a batch every feedEvery until stop is closed or the queue is
// empty; it returns the first error, after stop.
func (f *feeder) run(stop <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		t := time.NewTicker(feedEvery)
		defer t.Stop()
		for f.left() > 0 {
			select {
			case <-stop:
				done <- nil
				return
			case <-t.C:
				if err := f.feed(); err != nil {
					done <- err
					return
				}
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
