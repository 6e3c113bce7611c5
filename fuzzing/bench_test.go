package fuzzing

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseCrash reads a crash state out of go test's output for a
// fuzz failure (a 3 KB trace): the cost qa_compile adds to every crash.
func BenchmarkParseCrash(b *testing.B) {
	out := readCrash(b, "go-test-fuzz.txt")
	b.ReportAllocs()
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		ParseCrash(out)
	}
}

// BenchmarkMutate makes one dictionary mutant of the HTML evaluation seeds:
// the engine's own cost per input, next to the target's run.
func BenchmarkMutate(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "fixtures", "parsers", "htmlparse", "seeds", "*"))
	var seeds [][]byte
	for _, f := range files {
		s, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		seeds = append(seeds, s)
	}
	if len(seeds) == 0 {
		b.Skip("no seeds")
	}
	m := NewMutator(rand.New(rand.NewPCG(1, 2)), Harvest(seeds))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Mutate(seeds[i%len(seeds)], seeds)
		i++
	}
}

// BenchmarkHarvest builds the dictionary of the HTML evaluation seeds.
func BenchmarkHarvest(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join("..", "fixtures", "parsers", "htmlparse", "seeds", "*"))
	var seeds [][]byte
	for _, f := range files {
		s, _ := os.ReadFile(f)
		seeds = append(seeds, s)
	}
	b.ReportAllocs()
	for b.Loop() {
		Harvest(seeds)
	}
}
