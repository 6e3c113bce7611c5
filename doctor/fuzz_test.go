package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
)

// TestAFL: the afl++ check passes with both binaries, warns naming
// what is off without afl-clang-fast or without afl-fuzz, and passes here
// under CI (where .ci/run installs afl++ and clang).
func TestAFL(t *testing.T) {
	if c := AFL(fuzzing.AFLPath(), fuzzing.AFLClangFast()); os.Getenv("CI") != "" && !c.OK {
		t.Fatalf("CI is set and AFL++ is incomplete: %s", c.Detail)
	}
	for _, tc := range []struct {
		fuzz, fast string
		ok         bool
		want       string
	}{
		{"/usr/bin/afl-fuzz", "/usr/bin/afl-clang-fast", true, "built instrumented"},
		{"/usr/bin/afl-fuzz", "", false, "blind (-n) only"},
		{"", "", false, "aflpp engine is off"},
	} {
		c := AFL(tc.fuzz, tc.fast)
		if c.OK != tc.ok || c.Warn == tc.ok || c.Fatal || !strings.Contains(c.Detail, tc.want) || !tc.ok && c.Fix == "" {
			t.Errorf("AFL(%q, %q) = %+v, want ok=%v and %q", tc.fuzz, tc.fast, c, tc.ok, tc.want)
		}
	}
}

// TestLibFuzzer: the libfuzzer check passes where clang links libFuzzer
// (CI installs it) and is otherwise a warning that names the fallback.
func TestLibFuzzer(t *testing.T) {
	c := LibFuzzer(context.Background(), nil, t.TempDir())
	if os.Getenv("CI") != "" && !c.OK {
		t.Fatalf("CI is set and libFuzzer is unavailable: %s", c.Detail)
	}
	if !c.OK && (!c.Warn || !strings.Contains(c.Detail, "go test -fuzz")) {
		t.Errorf("a missing libFuzzer is a warning naming the fallback: %+v", c)
	}
	if c.OK {
		// A target whose last libFuzzer build failed: the engine is
		// degraded, and doctor names the compiler's first error.
		fuzzDir := t.TempDir()
		repo := &fleet.Repo{URL: "/src/parser", FuzzPackage: "./parse", FuzzTarget: "FuzzParse"}
		bin := filepath.Join(fuzzDir, fuzzing.TargetKey("go", repo.URL, repo.FuzzPackage, repo.FuzzTarget), "libfuzzer", "bin")
		if err := os.MkdirAll(bin, 0o700); err != nil {
			t.Fatal(err)
		}
		if d := LibFuzzer(context.Background(), repo, fuzzDir); !d.OK {
			t.Errorf("no build recorded yet: %+v", d)
		}
		rec := `{"target":"FuzzParse","cause":"parse/helper_test.go:9:2: undefined: seeds","at":"2026-12-06T02:00:00Z"}`
		if err := os.WriteFile(filepath.Join(bin, "last-build-failure.json"), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
		d := LibFuzzer(context.Background(), repo, fuzzDir)
		if d.OK || !d.Warn || !strings.Contains(d.Detail, "degraded on FuzzParse") || !strings.Contains(d.Detail, "parse/helper_test.go:9:2: undefined: seeds") || d.Fix == "" {
			t.Errorf("a failed build: %+v", d)
		}
	}
}
