package trajectory

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultMaxBytes is the size budget of one run record.
const DefaultMaxBytes = 50 << 20

// FooterReserve is the part of the size budget kept free for the footer:
// other records may use at most MaxBytes-FooterReserve bytes. With a budget
// under 4*FooterReserve the reserve is a quarter of the budget.
const FooterReserve = 64 << 10

// DefaultSyncInterval bounds how long a written record can stay unsynced.
const DefaultSyncInterval = time.Second

// RunsDir is the directory under the data dir that holds run records.
const RunsDir = "runs"

var (
	// ErrSizeBudget is returned for a record that would take the run record
	// past its size budget. The writer stays usable: the caller ends the run
	// with OutcomeSizeExceeded, and the footer always fits.
	ErrSizeBudget = errors.New("run record size budget exceeded")
	// ErrClosed is returned by every Writer method after Close, including a
	// second Close; the footer is written exactly once.
	ErrClosed = errors.New("run record closed")
	// ErrOrder is returned for a record out of sequence: a turn whose index
	// is not the next one, or a tool_disabled record whose turn is not the
	// next turn's index.
	ErrOrder = errors.New("record out of order")
	// ErrInvalid is returned for a record whose fields break the format's
	// rules (a bad run id, an unknown outcome).
	ErrInvalid = errors.New("invalid record")
)

// Option configures a Writer.
type Option func(*options)

type options struct {
	maxBytes     int64
	redactor     *Redactor
	syncInterval time.Duration
	now          func() time.Time
}

// WithMaxBytes sets the size budget (default DefaultMaxBytes).
func WithMaxBytes(n int64) Option { return func(o *options) { o.maxBytes = n } }

// WithRedactor sets the Redactor whose registered secrets are redacted from
// every record, in addition to the pattern rules. Writer.AddSecret adds to
// it.
func WithRedactor(r *Redactor) Option { return func(o *options) { o.redactor = r } }

// WithSyncInterval sets how long a written record may stay unsynced before
// the writer fsyncs (default DefaultSyncInterval). A negative interval
// fsyncs after every record.
func WithSyncInterval(d time.Duration) Option { return func(o *options) { o.syncInterval = d } }

// WithClock sets the clock used for timestamps the caller left zero.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// Path returns the run record path for runID under dataDir.
func Path(dataDir, runID string) string {
	return filepath.Join(dataDir, RunsDir, runID+".jsonl")
}

// Writer appends one run's records to <dir>/runs/<run-id>.jsonl. Every
// record is one write(2) of a whole line, so a crash of the process never
// leaves more than a torn last line. Methods are safe for concurrent use.
type Writer struct {
	mu        sync.Mutex
	f         *os.File
	path      string
	enc       *encoder
	red       *Redactor
	max       int64 // size budget
	limit     int64 // budget for records other than the footer
	size      int64
	turns     int
	totals    Totals
	startedAt time.Time
	now       func() time.Time
	interval  time.Duration
	timer     *time.Timer
	dirty     bool  // written since the last fsync
	err       error // sticky: the file may be damaged, no more writes
	closed    bool
}

// Create starts the run record for runID under dir (the data dir) and writes
// h as its header. It creates <dir>/runs with mode 0700 and the file with
// mode 0600, and fails with an error wrapping fs.ErrExist if the run record
// already exists. h.RunID must be empty (it is set to runID) or equal
// runID; a zero h.StartedAt is set from the clock.
//
// The header is written and fsynced under a temporary name and then linked
// into place, so a run record never exists without a whole header.
func Create(dir, runID string, h Header, opts ...Option) (*Writer, error) {
	o := options{maxBytes: DefaultMaxBytes, syncInterval: DefaultSyncInterval, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.redactor == nil {
		o.redactor = &Redactor{}
	}
	if err := checkRunID(runID); err != nil {
		return nil, fmt.Errorf("create run %q: %w", runID, err)
	}
	if o.maxBytes <= 0 {
		return nil, fmt.Errorf("create run %s: %w: max bytes %d", runID, ErrInvalid, o.maxBytes)
	}
	switch h.RunID {
	case "":
		h.RunID = runID
	case runID:
	default:
		return nil, fmt.Errorf("create run %s: %w: header run_id %q", runID, ErrInvalid, h.RunID)
	}
	if h.StartedAt.IsZero() {
		h.StartedAt = o.now().UTC()
	}
	w := &Writer{
		path:      Path(dir, runID),
		enc:       newEncoder(o.redactor),
		red:       o.redactor,
		max:       o.maxBytes,
		limit:     o.maxBytes - min(FooterReserve, o.maxBytes/4),
		startedAt: h.StartedAt,
		now:       o.now,
		interval:  o.syncInterval,
	}
	line, err := w.enc.encode(h)
	if err != nil {
		return nil, fmt.Errorf("create run %s: %w", runID, err)
	}
	if int64(len(line)) > w.limit {
		return nil, fmt.Errorf("create run %s: header of %d bytes: %w", runID, len(line), ErrSizeBudget)
	}
	f, err := createExclusive(w.path, line)
	if err != nil {
		return nil, fmt.Errorf("create run %s: %w", runID, err)
	}
	w.f = f
	w.size = int64(len(line))
	return w, nil
}

// checkRunID keeps run ids to safe file names.
func checkRunID(id string) error {
	if id == "" || len(id) > 128 || id[0] == '.' || id[0] == '-' {
		return fmt.Errorf("%w: run id must be 1-128 of [A-Za-z0-9._-], not starting with '.' or '-'", ErrInvalid)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isWord(c) && c != '-' && c != '.' {
			return fmt.Errorf("%w: run id must be 1-128 of [A-Za-z0-9._-], not starting with '.' or '-'", ErrInvalid)
		}
	}
	return nil
}

// createExclusive writes first (the header line) to a new file at path,
// never replacing an existing one: it writes and fsyncs a temporary file,
// hard-links it to path (which fails if path exists) and removes the
// temporary name. The returned file is open for appending.
func createExclusive(path string, first []byte) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp") // mode 0600
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(first); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return nil, err // *LinkError wrapping EEXIST when path exists
	}
	ok = true
	if err := os.Remove(tmp.Name()); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Path returns the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// AddSecret registers a secret to redact from every later record, wherever
// it appears. It returns ErrSecretTooShort for secrets shorter than
// MinSecretLen.
func (w *Writer) AddSecret(s string) error { return w.red.Add(s) }

// Totals returns the totals of the turns written so far, with DurationMS
// measured from the header's started_at to now.
func (w *Writer) Totals() Totals {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.totals
	t.DurationMS = max(0, w.now().Sub(w.startedAt).Milliseconds())
	return t
}

// WriteTurn appends a turn. t.Index must be the number of turns written
// before it (ErrOrder otherwise). It fails with an *UnserializableError for
// a value that cannot be encoded, ErrSizeBudget when the turn does not fit
// (nothing is written in either case), and ErrClosed after Close.
func (w *Writer) WriteTurn(t Turn) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return fmt.Errorf("write turn %d: %w", t.Index, err)
	}
	if t.Index != w.turns {
		return fmt.Errorf("write turn %d: %w: next turn index is %d", t.Index, ErrOrder, w.turns)
	}
	if err := w.append(t, w.limit); err != nil {
		return fmt.Errorf("write turn %d: %w", t.Index, err)
	}
	w.turns++
	w.totals.add(&t)
	return nil
}

// WriteToolDisabled appends a tool_disabled record. d.Turn must be the index
// of the next turn (the number of turns written), the first the tool is
// absent from. Errors are as for WriteTurn.
func (w *Writer) WriteToolDisabled(d ToolDisabled) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return fmt.Errorf("write tool_disabled %s: %w", d.Tool, err)
	}
	if d.Turn != w.turns {
		return fmt.Errorf("write tool_disabled %s: %w: turn %d, next turn index is %d", d.Tool, ErrOrder, d.Turn, w.turns)
	}
	if d.Tool == "" {
		return fmt.Errorf("write tool_disabled: %w: empty tool", ErrInvalid)
	}
	if err := w.append(d, w.limit); err != nil {
		return fmt.Errorf("write tool_disabled %s: %w", d.Tool, err)
	}
	return nil
}

// Close writes the footer, fsyncs and closes the file. A zero f.EndedAt is
// set from the clock, and zero f.Totals from the turns written (see
// Writer.Totals). The footer is exempt from the size budget (though not
// from MaxLineBytes).
//
// A footer that breaks the format (an unknown outcome; harness_error set
// without outcome harness_error or missing with it; a value that cannot be
// encoded; a line over MaxLineBytes) is refused and the writer stays open,
// so the caller can correct it. Any other failure closes the file anyway; the run record then has no
// footer and Recover completes it. Close after Close returns ErrClosed and
// writes nothing.
func (w *Writer) Close(f Footer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("close run: %w", ErrClosed)
	}
	if !f.Outcome.Valid() {
		return fmt.Errorf("close run: %w: outcome %q", ErrInvalid, f.Outcome)
	}
	if (f.Outcome == OutcomeHarnessError) != (f.HarnessError != "") {
		return fmt.Errorf("close run: %w: harness_error must be set exactly when outcome is harness_error", ErrInvalid)
	}
	if f.EndedAt.IsZero() {
		f.EndedAt = w.now().UTC()
	}
	if f.Totals == (Totals{}) {
		f.Totals = w.totals
		f.Totals.DurationMS = max(0, f.EndedAt.Sub(w.startedAt).Milliseconds())
	}
	line, err := w.enc.encode(f)
	if err != nil {
		return fmt.Errorf("close run: %w", err)
	}
	if len(line) > MaxLineBytes {
		return fmt.Errorf("close run: %w: footer of %d bytes is longer than a reader accepts", ErrSizeBudget, len(line))
	}
	// From here on the writer closes whatever happens.
	err = w.err
	if err == nil {
		err = w.writeLine(line)
	}
	if err == nil {
		err = w.f.Sync()
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close run: %w", err)
	}
	return nil
}

func (w *Writer) usable() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

// append encodes r and writes it as one line, if the record keeps the file
// within limit bytes.
func (w *Writer) append(r Record, limit int64) error {
	line, err := w.enc.encode(r)
	if err != nil {
		return err
	}
	if w.size+int64(len(line)) > limit {
		return fmt.Errorf("%w: record of %d bytes, %d of %d used", ErrSizeBudget, len(line), w.size, w.max)
	}
	if len(line) > MaxLineBytes {
		return fmt.Errorf("%w: record of %d bytes is longer than a reader accepts", ErrSizeBudget, len(line))
	}
	return w.writeLine(line)
}

// writeLine writes line with one write(2). A failed write is truncated away
// so the file stays well formed; if even that fails the writer is broken
// for good.
func (w *Writer) writeLine(line []byte) error {
	if _, err := w.f.Write(line); err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.err = fmt.Errorf("write failed and could not be undone: %w", errors.Join(err, terr))
			return w.err
		}
		if _, serr := w.f.Seek(w.size, io.SeekStart); serr != nil {
			w.err = fmt.Errorf("write failed and could not be undone: %w", errors.Join(err, serr))
			return w.err
		}
		return err
	}
	w.size += int64(len(line))
	return w.scheduleSync()
}

// scheduleSync makes sure the record just written reaches the disk within
// the sync interval: at once for a negative interval, else by a timer.
func (w *Writer) scheduleSync() error {
	if w.interval < 0 {
		if err := w.f.Sync(); err != nil {
			w.err = fmt.Errorf("fsync: %w", err)
			return w.err
		}
		return nil
	}
	if w.dirty {
		return nil
	}
	w.dirty = true
	if w.timer == nil {
		w.timer = time.AfterFunc(w.interval, w.timedSync)
	} else {
		w.timer.Reset(w.interval)
	}
	return nil
}

func (w *Writer) timedSync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || !w.dirty {
		return
	}
	w.dirty = false
	if err := w.f.Sync(); err != nil && w.err == nil {
		// Data may be lost: refuse further writes so the caller learns of it.
		w.err = fmt.Errorf("fsync: %w", err)
	}
}
