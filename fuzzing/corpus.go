package fuzzing

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Corpus is a target's persistent fuzzing state in a directory of its own
// (<data_dir>/fuzz/<target-key>/): queue/ holds the interesting inputs
// found so far (one file each, named by content hash), crashes/ the
// crashers, and index.jsonl one line per queue entry with the behaviour
// signature that made it interesting, so a new session knows which
// behaviours are already covered without re-running the queue. A torn last
// index line (a crash mid-append) is ignored; a queue file without an index
// line is still loaded, as a seed.
type Corpus struct {
	dir   string
	sigs  map[string]bool
	files map[string]bool
}

// Corpus limits: a target's queue stops growing at maxQueue inputs.
const (
	maxQueue      = 2048
	maxQueueInput = maxInput
)

type indexLine struct {
	File string `json:"file"`
	Sig  string `json:"sig"`
}

// OpenCorpus opens (creating) the corpus in dir and reads its index. The
// error names the directory or file.
func OpenCorpus(dir string) (*Corpus, error) {
	for _, sub := range []string{"queue", "crashes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("fuzz corpus: %w", err)
		}
	}
	c := &Corpus{dir: dir, sigs: map[string]bool{}, files: map[string]bool{}}
	f, err := os.Open(filepath.Join(dir, "index.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fuzz corpus: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l indexLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // a torn or foreign line
		}
		c.sigs[l.Sig] = true
		c.files[l.File] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fuzz corpus %s: %w", f.Name(), err)
	}
	return c, nil
}

// Dir is the corpus directory.
func (c *Corpus) Dir() string { return c.dir }

// Known reports whether a behaviour signature is already in the corpus.
func (c *Corpus) Known(sig string) bool { return c.sigs[sig] }

// Signatures returns the number of behaviours recorded.
func (c *Corpus) Signatures() int { return len(c.sigs) }

// Load returns up to max queue inputs, oldest name order (names are
// content hashes, so the order is stable), skipping empty and oversized
// files.
func (c *Corpus) Load(max int) ([][]byte, error) {
	out, err := LoadSeeds(filepath.Join(c.dir, "queue"), max, maxQueueInput)
	if err != nil {
		return nil, fmt.Errorf("fuzz corpus: %w", err)
	}
	return out, nil
}

// Add keeps input as interesting for sig (a new behaviour): the file is
// written atomically and fsynced before its index line is appended. It
// returns false when sig was known, the input is too large, or the queue is
// full.
func (c *Corpus) Add(input []byte, sig string) (bool, error) {
	if c.sigs[sig] || len(input) == 0 || len(input) > maxQueueInput || len(c.files) >= maxQueue {
		return false, nil
	}
	name := contentName(input)
	if err := writeAtomic(filepath.Join(c.dir, "queue", name), input); err != nil {
		return false, fmt.Errorf("fuzz corpus: %w", err)
	}
	line, _ := json.Marshal(indexLine{File: name, Sig: sig})
	f, err := os.OpenFile(filepath.Join(c.dir, "index.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("fuzz corpus: %w", err)
	}
	_, werr := f.Write(append(line, '\n'))
	serr := f.Sync()
	if cerr := f.Close(); werr == nil {
		werr = errors.Join(serr, cerr)
	}
	if werr != nil {
		return false, fmt.Errorf("fuzz corpus: %w", werr)
	}
	c.sigs[sig], c.files[name] = true, true
	return true, nil
}

// AddCrash keeps a crasher in crashes/ (by content hash; a known one is
// not rewritten).
func (c *Corpus) AddCrash(input []byte) error {
	p := filepath.Join(c.dir, "crashes", contentName(input))
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := writeAtomic(p, input); err != nil {
		return fmt.Errorf("fuzz corpus: %w", err)
	}
	return nil
}

// Minimized returns the smallest input kept for a crash key (an engine's
// outcome and crash state; see SetMinimized), or nil (also for a nil
// Corpus).
func (c *Corpus) Minimized(key string) []byte {
	if c == nil {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.dir, "minimized", contentName([]byte(key))))
	if err != nil || len(b) == 0 || len(b) > maxKeptInput {
		return nil
	}
	return b
}

// SetMinimized keeps input as the minimized crasher for key, unless one at
// most as long is kept already: a later session that meets the same crash
// replays it instead of minimizing again.
func (c *Corpus) SetMinimized(key string, input []byte) error {
	if c == nil || len(input) == 0 || len(input) > maxKeptInput {
		return nil
	}
	if old := c.Minimized(key); old != nil && len(old) <= len(input) {
		return nil
	}
	dir := filepath.Join(c.dir, "minimized")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("fuzz corpus: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, contentName([]byte(key))), input); err != nil {
		return fmt.Errorf("fuzz corpus: %w", err)
	}
	return nil
}

func contentName(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// writeAtomic writes b to p through a fsynced temporary file and a rename.
func writeAtomic(p string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), p)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// TargetKey names a target's corpus directory: kind, a dash and 16 hex
// digits of SHA-256 over the parts (e.g. the compiler argv, or the
// repository, package and fuzz target), so one target always finds its own
// corpus and two targets never share one.
func TargetKey(kind string, parts ...string) string {
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p)
		b.WriteByte(0)
	}
	sum := sha256.Sum256(b.Bytes())
	return kind + "-" + hex.EncodeToString(sum[:8])
}
