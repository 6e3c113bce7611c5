package trajectory

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// finishedRun returns the bytes of a finished run record with n turns.
func finishedRun(t *testing.T, n int) []byte {
	t.Helper()
	w := mustCreate(t, "r-read")
	for i := range n {
		if err := w.WriteTurn(sampleTurn(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(Footer{Outcome: OutcomeDone, FinalSummary: "all good"}); err != nil {
		t.Fatal(err)
	}
	return mustReadFile(t, w.Path())
}

func lines(b []byte) [][]byte {
	return bytes.SplitAfter(b, []byte("\n"))
}

// readAll drains r, returning the record types and the errors in order.
func readAll(r *Reader) (types []string, errs []error) {
	for range 1000 {
		rec, err := r.Next()
		if err != nil {
			errs = append(errs, err)
			if len(errs) >= 3 {
				return
			}
			continue
		}
		types = append(types, rec.RecordType())
	}
	return
}

func TestReaderTornTail(t *testing.T) {
	full := finishedRun(t, 2)
	ls := lines(full)
	withoutFooter := bytes.Join(ls[:3], nil)
	footer := ls[3]
	tests := map[string][]byte{
		"partial footer":               append(bytes.Clone(withoutFooter), footer[:20]...),
		"complete JSON but no newline": append(bytes.Clone(withoutFooter), footer[:len(footer)-1]...),
		"garbage with newline":         append(bytes.Clone(withoutFooter), "{\"type\":\"turn\",\"ind\n"...),
		"zeros after power loss":       append(bytes.Clone(withoutFooter), make([]byte, 300)...),
		"empty last line":              append(bytes.Clone(withoutFooter), '\n'),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			types, errs := readAll(NewReader(bytes.NewReader(data)))
			if strings.Join(types, ",") != "header,turn,turn" {
				t.Errorf("types %v", types)
			}
			if len(errs) != 3 || !errors.Is(errs[0], ErrTornTail) || errs[1] != io.EOF || errs[2] != io.EOF {
				t.Errorf("errors %v, want ErrTornTail once then io.EOF", errs)
			}
		})
	}
	types, errs := readAll(NewReader(bytes.NewReader(full)))
	if strings.Join(types, ",") != "header,turn,turn,footer" || errs[0] != io.EOF {
		t.Errorf("finished run: %v %v", types, errs)
	}
}

func TestReaderCorruption(t *testing.T) {
	full := finishedRun(t, 3)
	ls := lines(full)
	replace := func(i int, s string) []byte {
		c := make([][]byte, len(ls))
		copy(c, ls)
		c[i] = []byte(s)
		return bytes.Join(c, nil)
	}
	tests := []struct {
		name string
		data []byte
		line int
		msg  string
	}{
		{"garbage mid-file", replace(2, "{\"type\":\"turn\",\"index\":1,\"obs\n"), 3, "unexpected end of JSON"},
		{"torn line followed by more", replace(1, "{\"type\":\"tu"), 2, ""},
		{"empty line mid-file", replace(2, "\n"), 3, "unexpected end"},
		{"turn first", bytes.Join(ls[1:], nil), 1, "first record is turn, want header"},
		{"second header", replace(2, string(ls[0])), 3, "second header"},
		{"after footer", append(bytes.Clone(full), ls[1]...), 6, "turn after footer"},
		{"unknown type", replace(2, `{"type":"note","text":"x"}`+"\n"), 3, `unknown record type "note"`},
		{"no type", replace(2, `{"index":1}`+"\n"), 3, `no "type"`},
		{"wrong field type", replace(2, `{"type":"turn","index":"one"}`+"\n"), 3, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.data))
			var err error
			for range 10 {
				if _, err = r.Next(); err != nil {
					break
				}
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *CorruptError", err)
			}
			if ce.Line != tt.line || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "line") {
				t.Errorf("err = %v (line %d), want line %d containing %q", err, ce.Line, tt.line, tt.msg)
			}
			if _, again := r.Next(); again != err {
				t.Errorf("error not sticky: %v", again)
			}
		})
	}
}

func TestReaderEmptyAndReadAll(t *testing.T) {
	if _, err := NewReader(bytes.NewReader(nil)).Next(); err != io.EOF {
		t.Errorf("empty input: %v, want io.EOF", err)
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	if _, err := ReadAll(empty); !errors.Is(err, ErrNoHeader) {
		t.Errorf("ReadAll(empty) = %v, want ErrNoHeader", err)
	}
	if _, err := ReadAll(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadAll(missing) = %v", err)
	}
	torn := filepath.Join(dir, "torn.jsonl")
	full := finishedRun(t, 2)
	os.WriteFile(torn, full[:len(full)-5], 0o600)
	run, err := ReadAll(torn)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Torn || run.Footer != nil || len(run.Turns()) != 2 || run.Header.RunID != "r-read" {
		t.Errorf("ReadAll(torn) = torn %v footer %v turns %d header %q", run.Torn, run.Footer, len(run.Turns()), run.Header.RunID)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, append([]byte("x\n"), full...), 0o600)
	var ce *CorruptError
	if _, err := ReadAll(bad); !errors.As(err, &ce) || ce.Line != 1 {
		t.Errorf("ReadAll(bad) = %v, want *CorruptError at line 1", err)
	}
}

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := finishedRun(t, 3)
	ls := lines(full)

	s, err := Summary(write("done.jsonl", full))
	if err != nil {
		t.Fatal(err)
	}
	want := RunSummary{RunID: "r-read", Specialist: "qa-smoke", Outcome: OutcomeDone, Turns: 3, Duration: time.Second, StartedAt: t0, EndedAt: t0.Add(time.Second)}
	if s != want {
		t.Errorf("finished: %+v\nwant %+v", s, want)
	}

	crashed := append(bytes.Join(ls[:3], nil), ls[3][:10]...)
	s, err = Summary(write("crashed.jsonl", crashed))
	if err != nil {
		t.Fatal(err)
	}
	end := t0.Add(2*time.Second + 360*time.Millisecond) // turn 1 start + latency
	want = RunSummary{RunID: "r-read", Specialist: "qa-smoke", Outcome: OutcomeCrashed, Turns: 2, Duration: end.Sub(t0), StartedAt: t0, EndedAt: end}
	if s != want {
		t.Errorf("crashed: %+v\nwant %+v", s, want)
	}

	s, err = Summary(write("header.jsonl", ls[0]))
	if err != nil || s.Outcome != OutcomeCrashed || s.Turns != 0 || s.EndedAt != t0 {
		t.Errorf("header only: %+v, %v", s, err)
	}
	for name, data := range map[string][]byte{"empty": nil, "torn header": ls[0][:30]} {
		if _, err := Summary(write(name, data)); !errors.Is(err, ErrNoHeader) {
			t.Errorf("%s: %v, want ErrNoHeader", name, err)
		}
	}
}
