package trajectory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// RunSummary is what a run list shows about one run.
type RunSummary struct {
	RunID      string
	Specialist string
	// Outcome is the footer's outcome, or OutcomeCrashed when there is none.
	Outcome  Outcome
	Turns    int
	Findings int
	Duration time.Duration
	// StartedAt is the header's started_at. EndedAt is the footer's
	// ended_at; for a crashed run, the end of its last turn (or StartedAt).
	StartedAt time.Time
	EndedAt   time.Time
}

// maxFooterScan bounds how far back Summary looks for the footer line before
// it falls back to reading the whole file.
const maxFooterScan = 1 << 20

// Summary summarizes the run record at path reading only what it needs: the
// header line and, for a finished run, the footer line at the end of the
// file. Only a run without a footer is read through, to count its turns and
// findings. A file without a complete header fails with ErrNoHeader; a
// finished run's middle is not checked for corruption.
func Summary(path string) (RunSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return RunSummary{}, fmt.Errorf("summarize run: %w", err)
	}
	defer f.Close()
	r := NewReader(f)
	rec, err := r.Next()
	if err == io.EOF || errors.Is(err, ErrTornTail) {
		return RunSummary{}, fmt.Errorf("summarize %s: %w", path, ErrNoHeader)
	}
	if err != nil {
		return RunSummary{}, fmt.Errorf("summarize %s: %w", path, err)
	}
	h := rec.(Header) // the Reader enforces header first
	s := RunSummary{RunID: h.RunID, Specialist: h.Specialist, StartedAt: h.StartedAt}
	if foot, ok := lastFooter(f); ok {
		s.fromFooter(foot)
		return s, nil
	}
	s.Outcome = OutcomeCrashed
	s.EndedAt = h.StartedAt
	for {
		rec, err := r.Next()
		if err == io.EOF || errors.Is(err, ErrTornTail) {
			break
		}
		if err != nil {
			return RunSummary{}, fmt.Errorf("summarize %s: %w", path, err)
		}
		switch rec := rec.(type) {
		case Turn:
			s.Turns++
			s.Findings += rec.Findings
			if end := rec.StartedAt.Add(time.Duration(rec.LatencyMS) * time.Millisecond); end.After(s.EndedAt) {
				s.EndedAt = end
			}
		case Footer: // only if lastFooter missed it, e.g. a huge final summary
			s.fromFooter(rec)
			return s, nil
		}
	}
	s.Duration = s.EndedAt.Sub(s.StartedAt)
	return s, nil
}

func (s *RunSummary) fromFooter(f Footer) {
	s.Outcome = f.Outcome
	s.Turns = f.Totals.Turns
	s.Findings = f.Totals.Findings
	s.Duration = time.Duration(f.Totals.DurationMS) * time.Millisecond
	s.EndedAt = f.EndedAt
}

// lastFooter returns the footer on the file's last line, if the file ends
// with a complete footer line of at most maxFooterScan bytes.
func lastFooter(f *os.File) (Footer, bool) {
	st, err := f.Stat()
	if err != nil || st.Size() < 2 {
		return Footer{}, false
	}
	size := st.Size()
	n := min(size, maxFooterScan)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil {
		return Footer{}, false
	}
	if buf[len(buf)-1] != '\n' {
		return Footer{}, false // torn tail
	}
	buf = buf[:len(buf)-1]
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && n < size {
		return Footer{}, false // line longer than the scan
	}
	rec, err := decodeRecord(buf[i+1:])
	if err != nil {
		return Footer{}, false
	}
	foot, ok := rec.(Footer)
	return foot, ok
}
