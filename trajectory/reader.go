package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes is the longest line a Reader accepts; a longer one is
// corruption. It is well above what a Writer with the default budget writes.
const MaxLineBytes = 128 << 20

var (
	// ErrTornTail is returned once by Reader.Next when the last line is
	// incomplete: no trailing newline, or not valid JSON. It is what a crash
	// mid-write leaves; the records before it are intact. Next returns io.EOF
	// after it.
	ErrTornTail = errors.New("torn last line")
	// ErrNoHeader is returned when a run record has no complete header.
	ErrNoHeader = errors.New("run record has no header")
)

// CorruptError reports a damaged run record: a line that is not a valid
// record, or records out of order, anywhere but a torn last line.
type CorruptError struct {
	Line int // 1-based
	Err  error
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt run record at line %d: %v", e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Reader streams the records of one run record.
type Reader struct {
	br      *bufio.Reader
	closer  io.Closer
	line    int   // lines read
	offset  int64 // bytes through the end of the last good line
	last    string
	sawTorn bool
	err     error // sticky
}

// Open opens the run record at path for reading. Close the Reader when done.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open run record: %w", err)
	}
	r := NewReader(f)
	r.closer = f
	return r, nil
}

// NewReader reads a run record from rd. Close does not close rd.
func NewReader(rd io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(rd, 64<<10)}
}

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}

// Next returns the next record: a Header, Turn, ToolDisabled or Footer
// value. At the end it returns io.EOF; a torn last line yields ErrTornTail
// once, then io.EOF. A damaged line or a record out of order (anything
// before the header, a second header or footer, anything after the footer)
// returns a *CorruptError naming the line, and so does every later call.
// Unknown fields are ignored, so newer writers stay readable.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	line, complete, err := r.readLine()
	if err != nil {
		r.err = err
		return nil, err
	}
	if line == nil {
		r.err = io.EOF
		return nil, io.EOF
	}
	r.line++
	if !complete {
		return nil, r.torn()
	}
	rec, err := decodeRecord(line)
	if err != nil {
		if !json.Valid(line) {
			if _, perr := r.br.Peek(1); perr == io.EOF {
				return nil, r.torn() // the last line: a torn write
			}
		}
		return nil, r.corrupt(err)
	}
	if err := r.checkOrder(rec.RecordType()); err != nil {
		return nil, r.corrupt(err)
	}
	r.offset += int64(len(line)) + 1
	return rec, nil
}

func (r *Reader) torn() error {
	r.err = io.EOF
	if r.sawTorn {
		return io.EOF
	}
	r.sawTorn = true
	return ErrTornTail
}

func (r *Reader) corrupt(err error) error {
	r.err = &CorruptError{Line: r.line, Err: err}
	return r.err
}

// checkOrder enforces header first, footer last, one of each.
func (r *Reader) checkOrder(typ string) error {
	prev := r.last
	r.last = typ
	switch {
	case prev == "" && typ != TypeHeader:
		return fmt.Errorf("first record is %s, want header", typ)
	case prev == TypeFooter:
		return fmt.Errorf("%s after footer", typ)
	case prev != "" && typ == TypeHeader:
		return errors.New("second header")
	}
	return nil
}

// readLine returns the next line without its newline and whether it had
// one; nil at the end of input.
func (r *Reader) readLine() ([]byte, bool, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes {
			return nil, false, &CorruptError{Line: r.line + 1, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
		}
		switch {
		case err == nil:
			if buf == nil {
				return chunk[:len(chunk)-1], true, nil
			}
			buf = append(buf, chunk[:len(chunk)-1]...)
			return buf, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
		case err == io.EOF:
			buf = append(buf, chunk...)
			if len(buf) == 0 {
				return nil, false, nil
			}
			return buf, false, nil
		default:
			return nil, false, fmt.Errorf("read run record: %w", err)
		}
	}
}

// decodeRecord decodes one line by its type discriminator.
func decodeRecord(line []byte) (Record, error) {
	typ, err := recordType(line)
	if err != nil {
		return nil, err
	}
	switch typ {
	case TypeHeader:
		var h Header
		err = json.Unmarshal(line, &h)
		return h, err
	case TypeTurn:
		var t Turn
		err = json.Unmarshal(line, &t)
		return t, err
	case TypeToolDisabled:
		var d ToolDisabled
		err = json.Unmarshal(line, &d)
		return d, err
	case TypeFooter:
		var f Footer
		err = json.Unmarshal(line, &f)
		return f, err
	}
	return nil, fmt.Errorf("unknown record type %q", typ)
}

// recordType reads the "type" key, fast when it comes first as a Writer
// puts it.
func recordType(line []byte) (string, error) {
	const prefix = `{"type":"`
	if bytes.HasPrefix(line, []byte(prefix)) {
		rest := line[len(prefix):]
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			switch string(rest[:i]) {
			case TypeHeader, TypeTurn, TypeToolDisabled, TypeFooter:
				return string(rest[:i]), nil // json.Unmarshal validates the line
			}
		}
	}
	var probe struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return "", err
	}
	if probe.Type == nil {
		return "", errors.New(`record has no "type"`)
	}
	return *probe.Type, nil
}

// Run is a whole run record read into memory.
type Run struct {
	Header Header
	// Records holds every record in file order, header and footer included.
	Records []Record
	// Footer is nil when the run has no footer (it crashed).
	Footer *Footer
	// Torn reports that the file ended in a torn line, which was skipped.
	Torn bool
}

// Turns returns the run's turns in order.
func (r *Run) Turns() []Turn {
	var out []Turn
	for _, rec := range r.Records {
		if t, ok := rec.(Turn); ok {
			out = append(out, t)
		}
	}
	return out
}

// ReadAll reads the whole run record at path. A torn last line is skipped
// and reported in Run.Torn, not as an error; a file without a complete
// header fails with ErrNoHeader.
func ReadAll(path string) (*Run, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	run := &Run{}
	for {
		rec, err := r.Next()
		switch {
		case err == io.EOF:
			if len(run.Records) == 0 {
				return nil, fmt.Errorf("read %s: %w", path, ErrNoHeader)
			}
			return run, nil
		case errors.Is(err, ErrTornTail):
			run.Torn = true
			continue
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		switch rec := rec.(type) {
		case Header:
			run.Header = rec
		case Footer:
			run.Footer = &rec
		}
		run.Records = append(run.Records, rec)
	}
}
