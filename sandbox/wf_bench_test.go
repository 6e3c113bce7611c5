package sandbox

import (
	"fmt"
	"testing"
)

func BenchmarkWriteFileNew(b *testing.B) {
	s, err := Open(b.TempDir(), "r-wf")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Abandon()
	n := 0
	for b.Loop() {
		n++
		if err := s.WriteFile(fmt.Sprintf("src/%d.src", n), []byte("let x = 1;\n")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteFileReuse(b *testing.B) {
	s, err := Open(b.TempDir(), "r-wf")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Abandon()
	for b.Loop() {
		if err := s.WriteFile("src/cur.src", []byte("let x = 1;\n")); err != nil {
			b.Fatal(err)
		}
	}
}
