package trajectory

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// BenchmarkWriteTurn measures the per-turn cost the agent loop pays: validate,
// encode, redact and write(2) one ~1 KB turn to a real file.
func BenchmarkWriteTurn(b *testing.B) {
	w, err := Create(b.TempDir(), "r-bench", sampleHeader(), WithMaxBytes(1<<40), WithSyncInterval(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(Footer{Outcome: OutcomeDone})
	turn := sampleTurn(0)
	line, err := MarshalRecord(turn)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line) + 1))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		turn.Index = i
		if err := w.WriteTurn(turn); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEncodeTurn is BenchmarkWriteTurn without the system call.
func BenchmarkEncodeTurn(b *testing.B) {
	enc := newEncoder(defaultRedactor)
	turn := sampleTurn(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.encode(turn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTurn measures streaming one turn back.
func BenchmarkReadTurn(b *testing.B) {
	line, err := MarshalRecord(sampleTurn(0))
	if err != nil {
		b.Fatal(err)
	}
	line = append(line, '\n')
	hdr, _ := MarshalRecord(sampleHeader())
	data := append(append(hdr, '\n'), bytes.Repeat(line, 1000)...)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	var r *Reader
	for b.Loop() {
		if r == nil {
			r = NewReader(bytes.NewReader(data))
			r.Next() // header
		}
		if _, err := r.Next(); err == io.EOF {
			r = nil
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONMarshalTurn is the baseline: encoding/json alone, without
// validation or redaction.
func BenchmarkJSONMarshalTurn(b *testing.B) {
	turn := turnWire{TypeTurn, sampleTurn(0)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(turn); err != nil {
			b.Fatal(err)
		}
	}
}
