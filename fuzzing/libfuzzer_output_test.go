package fuzzing

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readLibFuzzer(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "libfuzzer", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestParseLibFuzzer reads libFuzzer sessions (recorded from the fixture's
// binary, and hand-written for the reports that fixture cannot produce)
// into statistics and crashes, and each crash into the outcome and crash
// state every engine gives it.
func TestParseLibFuzzer(t *testing.T) {
	type crash struct {
		Kind, Artifact, Outcome, State string
		Execs                          int
	}
	tests := []struct {
		file    string
		stats   LibFuzzerStats
		crashes []crash
	}{
		{"crash.txt", LibFuzzerStats{Execs: 7403, Coverage: 156, Features: 423, CorpusInputs: 72, CorpusBytes: 679, Inited: 1, InitedCov: 153, NewUnits: 86, PeakRSSMB: 36},
			[]crash{{"deadly signal", "/tmp/lfout/crash-983def9199721a71d7ca3f32f4b6cbb53d2b2317", Crashed,
				"panic: assignment to entry in nil map @ record.Parse < record.FuzzParse.funcN", 7308}}},
		{"unrecovered.txt", LibFuzzerStats{Execs: 58, Coverage: 6, Features: 83, CorpusInputs: 44, CorpusBytes: 332, Inited: 44, InitedCov: 6, PeakRSSMB: 29},
			[]crash{{"deadly signal", "/jail/fuzz/fuzz-libfuzzer-1/artifacts/crash-ff83ce2c47541c2e97f5adae5eb711245040d690", Crashed,
				"panic: assignment to entry in nil map @ magic.Parse", 58}}},
		{"timeout.txt", LibFuzzerStats{Execs: 1100, ExecsPerSec: 183, Coverage: 150, Features: 330, CorpusInputs: 9, CorpusBytes: 1102, Inited: 3, InitedCov: 140, NewUnits: 7, PeakRSSMB: 31},
			[]crash{{"timeout", "/jail/fuzz/fuzz-libfuzzer-1/artifacts/timeout-2f9b1c8e3d2a1b4c5d6e7f8091a2b3c4d5e6f708", TimedOut, "hang: x (1 bytes)", 1024}}},
		{"oom.txt", LibFuzzerStats{Execs: 512, ExecsPerSec: 256, Coverage: 130, Features: 260, CorpusInputs: 5, CorpusBytes: 1 << 10, Inited: 1, InitedCov: 120, PeakRSSMB: 31},
			[]crash{{"out-of-memory", "/jail/fuzz/fuzz-libfuzzer-1/artifacts/oom-8a3c8a1f6b7e1d2c3b4a5968778695a4b3c2d1e0", Resource, "libFuzzer: out-of-memory", 512}}},
		{"failure.txt", LibFuzzerStats{Execs: 3, Coverage: 10, Features: 12, CorpusInputs: 2, CorpusBytes: 18, Inited: 2, InitedCov: 10, PeakRSSMB: 29},
			[]crash{{"deadly signal", "/jail/artifacts/crash-0123456789abcdef0123456789abcdef01234567", Crashed, `test failure: round trip: got "…", want "…" at offset N`, 3}}},
		{"fork.txt", LibFuzzerStats{Execs: 175180, Coverage: 732, Features: 567, CorpusInputs: 91}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			st, crashes := ParseLibFuzzer(readLibFuzzer(t, tt.file))
			if tt.file == "fork.txt" {
				if len(crashes) != 15 {
					t.Errorf("fork mode: %d crash reports, want 15 (one per job that crashed)", len(crashes))
				}
				crashes = nil
			}
			if diff := cmp.Diff(tt.stats, st); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			var got []crash
			for _, c := range crashes {
				out := c.outcome()
				got = append(got, crash{c.Kind, c.Artifact, out, c.state(out, []byte("x")), c.Execs})
			}
			if diff := cmp.Diff(tt.crashes, got); diff != "" {
				t.Errorf("crashes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDropHarnessFrames: the harness's frames go, the target's stay.
func TestDropHarnessFrames(t *testing.T) {
	in := "goroutine 9 [running]:\nruntime/debug.Stack()\n\t/go/src/runtime/debug/stack.go:26 +0x9b\nexample.com/m/fleetdlibfuzzer/testing.Run.func1.1()\n\t/j/repo/fleetdlibfuzzer/testing/testing.go:431 +0x7b\nexample.com/m/p.Parse(...)\n\t/j/repo/p/p.go:25\nmain.LLVMFuzzerTestOneInput(...)\n\t/j/repo/fleetdlibfuzzer/main/main.go:15\nexample.com/m/fleetdlibfuzzer/x/p_test.FuzzP.func1(0x1)\n\t/j/repo/fleetdlibfuzzer/x/p_test/fuzz_test_fleetdlibfuzzer.go:9 +0x1\n"
	want := "goroutine 9 [running]:\nruntime/debug.Stack()\n\t/go/src/runtime/debug/stack.go:26 +0x9b\nexample.com/m/p.Parse(...)\n\t/j/repo/p/p.go:25\nexample.com/m/fleetdlibfuzzer/x/p_test.FuzzP.func1(0x1)\n\t/j/repo/fleetdlibfuzzer/x/p_test/fuzz_test_fleetdlibfuzzer.go:9 +0x1\n"
	if diff := cmp.Diff(want, string(dropHarnessFrames([]byte(in)))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := ParseCrash(dropHarnessFrames([]byte("panic: x\n\n" + in))).String(); got != "panic: x @ p.Parse < p_test.FuzzP.funcN" {
		t.Errorf("state %q", got)
	}
}

// FuzzParseLibFuzzer: libFuzzer's output is outside input (the target
// prints into it); the parser never panics and every crash it reports
// classifies as a finding with a state.
func FuzzParseLibFuzzer(f *testing.F) {
	for _, name := range []string{"crash.txt", "timeout.txt", "oom.txt", "failure.txt"} {
		f.Add(readLibFuzzer(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, crashes := ParseLibFuzzer(b)
		if st.Execs < 0 || st.CorpusInputs < 0 {
			t.Errorf("negative statistics %+v", st)
		}
		for _, c := range crashes {
			out := c.outcome()
			if !Finding(out) {
				t.Errorf("crash %q classified %s", c.Kind, out)
			}
			if c.state(out, b) == "" {
				t.Errorf("crash %q without a state", c.Kind)
			}
		}
	})
}

// FuzzSetupCPU: whatever a replay printed, reading the harness's setup
// CPU line never panics, takes out at most that one line (the output
// read is not written), and leaves output without it as it was.
func FuzzSetupCPU(f *testing.F) {
	f.Add([]byte("INFO: Seed: 1\nfleetd-setup-cpu: 12345678\nINFO: Running 1 inputs\n"))
	f.Add([]byte("fleetd-setup-cpu: 99999999999999999999999\n"))
	f.Add([]byte("fleetd-setup-cpu: 7"))
	f.Fuzz(func(t *testing.T, out []byte) {
		orig := append([]byte(nil), out...)
		d, rest := setupCPU(out)
		if d < 0 {
			t.Fatalf("negative setup CPU %s from %q", d, orig)
		}
		if !bytes.Contains(orig, []byte("fleetd-setup-cpu: ")) && (!bytes.Equal(rest, orig) || d != 0) {
			t.Fatalf("output without the line changed: %q -> %q, %s", orig, rest, d)
		}
		if !bytes.Equal(out, orig) {
			t.Fatalf("the output itself was changed: %q -> %q", orig, out)
		}
		if n := bytes.Count(orig, []byte("\n")) - bytes.Count(rest, []byte("\n")); n != 0 && n != 1 {
			t.Fatalf("%d lines taken out of %q", n, orig)
		}
	})
}
