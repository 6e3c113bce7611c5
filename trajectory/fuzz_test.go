package trajectory

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzReader checks the reader never panics, reports a torn tail at most
// once and only at the end, and that whatever it accepts re-encodes to a
// line it accepts again.
func FuzzReader(f *testing.F) {
	if golden, err := os.ReadFile(filepath.Join("testdata", "run.golden.jsonl")); err == nil {
		for _, l := range lines(golden)[3:5] {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"header","run_id":"r"}` + "\n" + `{"type":"footer","outcome":"done"}` + "\n"))
	f.Add([]byte(`{"type":"header"}` + "\n" + `{"type":"turn","index":0,"result":{"a":[1,2,{"b":null}]}}`))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		torn := 0
		for range 10000 {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if errors.Is(err, ErrTornTail) {
				torn++
				if torn > 1 {
					t.Fatal("ErrTornTail twice")
				}
				continue
			}
			if err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					t.Fatalf("error %v is neither io.EOF, ErrTornTail nor *CorruptError", err)
				}
				if _, again := r.Next(); again != err {
					t.Fatalf("error not sticky: %v then %v", err, again)
				}
				return
			}
			if torn > 0 {
				t.Fatal("record after ErrTornTail")
			}
			line, err := MarshalRecord(rec)
			if err != nil {
				continue // e.g. a footer outcome the writer would refuse is still readable
			}
			if _, err := decodeRecord(line); err != nil {
				t.Fatalf("re-encoded record does not decode: %v\n%s", err, line)
			}
		}
	})
}

// FuzzRedact checks redaction never panics, is idempotent, and keeps JSON
// valid.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		"PRIVATE_KEY=0x" + privHex, "tx 0x" + txHex, pemKey, googleK, "Authorization: Bearer " + jwt,
		"key [REDACTED:private_key] 0x" + txHex, `{"private_key":"x","tx":"0x` + txHex + `"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Redact(s)
		if twice := Redact(once); twice != once {
			t.Fatalf("not idempotent:\n%q\n%q\n%q", s, once, twice)
		}
		doc := appendString(nil, s)
		out, err := defaultRedactor.RedactJSON(doc)
		if err != nil {
			t.Fatalf("RedactJSON(%s): %v", doc, err)
		}
		if utf8.ValidString(s) && string(out) != string(appendString(nil, once)) {
			t.Fatalf("RedactJSON %s, Redact %q", out, once)
		}
		if again, _ := defaultRedactor.RedactJSON(out); !bytes.Equal(again, out) {
			t.Fatalf("RedactJSON not idempotent: %s -> %s", out, again)
		}
	})
}
