package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/specialists"
	"github.com/qafleet/fleetd/trajectory"
)

// fastCompiler accepts everything at once: the benchmark measures the
// fleet's overhead per execution, not a compiler.
const fastCompiler = "#!/bin/sh\nexec cat \"$1\"\n"

var benchCorpus = []string{"let x = 1 + 2;\nprint x;\n", "fn f(a) { return a * 2; }\nprint f(21);\n", "enum Color { Red, Green }\n"}

// benchCompiler returns one of the two compilers the fuzz benchmark runs: a trivial one
// (the fleet's overhead per execution dominates) and the testbed's real one,
// this test binary acting as `fleetd testbed compile`.
func benchCompiler(b *testing.B, kind string) string {
	dir := b.TempDir()
	cc := filepath.Join(dir, "cc.sh")
	script := fastCompiler
	if kind == "testbed" {
		self, _ := os.Executable()
		script = fmt.Sprintf("#!/bin/sh\nFLEETD_TEST_MAIN=1 exec %q testbed compile \"$1\"\n", self)
	}
	os.WriteFile(cc, []byte(script), 0o755)
	return cc
}

// BenchmarkFuzzVsPlainLoop compares like with like: it runs the fuzz
// playbook through the loop once, then runs the same compiler on exactly the
// inputs the fuzzer compiled, in a plain loop, and reports both rates.
func BenchmarkFuzzVsPlainLoop(b *testing.B) {
	for _, kind := range []string{"trivial", "testbed"} {
		b.Run(kind, func(b *testing.B) {
			cc := benchCompiler(b, kind)
			dir := b.TempDir()
			env := &qatools.Env{Target: fleet.Target{Compiler: []string{"/bin/sh", cc, "{src}"}}, Limits: qatools.Limits{CompileTimeout: 2 * time.Second}}
			var fuzzTime, plainTime time.Duration
			execs := 0
			n := 0
			for b.Loop() {
				n++
				id := fmt.Sprintf("r-vs-%d", n)
				sb, err := sandbox.Open(filepath.Join(dir, "sb"), id)
				if err != nil {
					b.Fatal(err)
				}
				run := &qatools.Run{ID: id, Source: "qa-fuzz", Sandbox: sb, Meter: sandbox.NewMeter(fleet.Budget{})}
				reg, _ := qatools.NewRegistry(env, run, "qa_compile", "qa_report")
				model, _ := specialists.New("fuzz", specialists.Options{Corpus: benchCorpus, Caps: map[string]int{"fuzz": 120}})
				w, _ := trajectory.Create(dir, id, trajectory.Header{RunID: id, Specialist: "fuzz"})
				start := time.Now()
				if _, err := fleet.Run(context.Background(), fleet.LoopConfig{RunID: id, Specialist: "fuzz", Model: model, Tools: reg,
					Target: env.Target, Dial: fleettest.Dial(fleet.Observe), Meter: run.Meter, Record: w}); err != nil {
					b.Fatal(err)
				}
				fuzzTime += time.Since(start)
				sb.Abandon()
				rec, err := trajectory.ReadAll(trajectory.Path(dir, id))
				if err != nil {
					b.Fatal(err)
				}
				var sources []string
				for _, t := range rec.Turns() {
					if t.ExecutedAction != nil && t.ExecutedAction.Tool == "qa_compile" {
						var a struct{ Source string }
						json.Unmarshal(t.ExecutedAction.Args, &a)
						sources = append(sources, a.Source)
					}
				}
				execs += len(sources)
				src := filepath.Join(dir, "plain.src")
				start = time.Now()
				for _, s := range sources {
					os.WriteFile(src, []byte(s), 0o600)
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					exec.CommandContext(ctx, "/bin/sh", cc, src).Run()
					cancel()
				}
				plainTime += time.Since(start)
			}
			fuzzRate := float64(execs) / fuzzTime.Seconds()
			plainRate := float64(execs) / plainTime.Seconds()
			b.ReportMetric(fuzzRate, "fuzz-execs/s")
			b.ReportMetric(plainRate, "plain-execs/s")
			b.ReportMetric(fuzzRate/plainRate, "ratio")
		})
	}
}
