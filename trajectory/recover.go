package trajectory

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// RecoveredSummary is the final_summary of a footer written by Recover.
const RecoveredSummary = "run did not finish"

// Recover completes the run record at path if it has no footer, as left by
// a crash: it truncates a torn last line and appends a footer with outcome
// harness_error, final_summary RecoveredSummary, harness_error reason
// (redacted; "unknown" if empty), totals recomputed from the turns present,
// and ended_at the file's modification time, when the last record was
// written. It returns true if it wrote a footer.
//
// It is idempotent: a run record that already ends with a footer is left
// untouched and Recover returns false, nil. A file without a complete
// header (ErrNoHeader) or damaged before its last line (*CorruptError) is
// left untouched and the error returned. The daemon calls it at start, for
// runs no process is writing.
func Recover(path, reason string) (recovered bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("recover run: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			recovered, err = false, fmt.Errorf("recover %s: %w", path, cerr)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("recover %s: %w", path, err)
	}
	var (
		h      *Header
		totals Totals
	)
	r := NewReader(f)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrTornTail) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("recover %s: %w", path, err)
		}
		switch rec := rec.(type) {
		case Header:
			h = &rec
		case Turn:
			totals.add(&rec)
		case Footer:
			return false, nil // finished; the Reader makes sure it is last
		}
	}
	if h == nil {
		return false, fmt.Errorf("recover %s: %w", path, ErrNoHeader)
	}
	if reason == "" {
		reason = "unknown"
	}
	ended := st.ModTime().UTC()
	totals.DurationMS = max(0, ended.Sub(h.StartedAt).Milliseconds())
	line, err := newEncoder(defaultRedactor).encode(Footer{
		Outcome:      OutcomeHarnessError,
		FinalSummary: RecoveredSummary,
		Totals:       totals,
		HarnessError: reason,
		EndedAt:      ended.Truncate(time.Millisecond),
	})
	if err != nil {
		return false, fmt.Errorf("recover %s: %w", path, err)
	}
	if err := f.Truncate(r.offset); err != nil {
		return false, fmt.Errorf("recover %s: %w", path, err)
	}
	if _, err := f.WriteAt(line, r.offset); err != nil {
		// A footer cut short (a full disk) is taken back, so the record
		// ends at its last whole line as before; a later Recover retries.
		if terr := f.Truncate(r.offset); terr != nil {
			err = errors.Join(err, terr)
		}
		return false, fmt.Errorf("recover %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("recover %s: %w", path, err)
	}
	return true, nil
}
