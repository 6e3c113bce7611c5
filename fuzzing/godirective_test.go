package fuzzing

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaiseGoLine: a lower go directive is raised with its comment and
// line ending kept, a missing one added only above the go command's
// assumption (1.16), and anything else is left as it is.
func TestRaiseGoLine(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		minor    int
		want     string // "" = unchanged
	}{
		{"old", "module m\n\ngo 1.12\n", 13, "module m\n\ngo 1.13\n"},
		{"patch", "module m\ngo 1.9.7\nrequire x v1.0.0\n", 18, "module m\ngo 1.18\nrequire x v1.0.0\n"},
		{"comment", "module m\ngo 1.11 // old\n", 13, "module m\ngo 1.13 // old\n"},
		{"crlf", "module m\r\ngo 1.12\r\n", 13, "module m\r\ngo 1.13\r\n"},
		{"no newline", "module m\ngo 1.12", 18, "module m\ngo 1.18"},
		{"same", "module m\ngo 1.13\n", 13, ""},
		{"newer", "module m\ngo 1.22.0\ntoolchain go1.23.1\n", 13, ""},
		{"rc", "module m\ngo 1.21rc1\n", 18, ""},
		{"missing, 1.16 enough", "module m\n", 13, ""},
		{"missing", "module m", 18, "module m\ngo 1.18\n"},
		{"malformed", "module m\ngo banana\n", 18, ""},
		{"two fields", "module m\ngo 1.12 1.13\n", 18, ""},
		{"go 2", "module m\ngo 2.0\n", 18, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := raiseGoLine([]byte(tc.in), tc.minor)
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || changed != (tc.want != "") {
				t.Errorf("raiseGoLine(%q, %d) = %q, %v; want %q", tc.in, tc.minor, got, changed, want)
			}
		})
	}
}

// TestRaiseGoDirective: the file is raised and restore puts it back
// byte for byte; a go.mod already new enough is not written; a missing
// one is an error naming the file.
func TestRaiseGoDirective(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "go.mod")
	old := []byte("module example.com/old\n\ngo 1.12\n\nrequire example.com/dep v1.0.0 // indirect\n")
	if err := os.WriteFile(p, old, 0o644); err != nil {
		t.Fatal(err)
	}
	restore, err := RaiseGoDirective(dir, StandInGo)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Contains(b, []byte("\ngo 1.13\n")) || !bytes.Contains(b, []byte("example.com/dep v1.0.0 // indirect")) {
		t.Errorf("raised go.mod %q", b)
	}
	restore()
	if b, _ := os.ReadFile(p); !bytes.Equal(b, old) {
		t.Errorf("restored go.mod %q, want %q", b, old)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v after restore", info.Mode().Perm())
	}
	if _, err := RaiseGoDirective(t.TempDir(), StandInGo); err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Errorf("no go.mod: %v", err)
	}
}

// FuzzRaiseGoLine: whatever go.mod text, raising never panics, keeps
// every line but the go directive, is idempotent, and leaves a directive
// that reads at least 1.minor when it changed anything.
func FuzzRaiseGoLine(f *testing.F) {
	f.Add([]byte("module m\n\ngo 1.12\n"), uint8(13))
	f.Add([]byte("module m\ngo 1.11 // c\r\n"), uint8(18))
	f.Add([]byte("module m"), uint8(18))
	f.Add([]byte("go 1.9999999999999999999\n"), uint8(18))
	f.Fuzz(func(t *testing.T, mod []byte, m uint8) {
		minor := int(m % 40)
		out, changed := raiseGoLine(mod, minor)
		if !changed {
			if !bytes.Equal(out, mod) {
				t.Fatalf("unchanged but different: %q -> %q", mod, out)
			}
			return
		}
		again, changed2 := raiseGoLine(out, minor)
		if changed2 || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", mod, out, again)
		}
		inLines, outLines := bytes.SplitAfter(mod, []byte("\n")), bytes.SplitAfter(out, []byte("\n"))
		diff := 0
		for i, l := range inLines {
			if i >= len(outLines) || !bytes.Equal(bytes.TrimRight(l, "\n"), bytes.TrimRight(outLines[i], "\n")) {
				diff++
			}
		}
		if diff > 1 {
			t.Fatalf("%d lines changed: %q -> %q", diff, mod, out)
		}
		found := false
		for _, l := range outLines {
			code, _, _ := bytes.Cut(l, []byte("//"))
			if f := strings.Fields(string(code)); len(f) == 2 && f[0] == "go" {
				n, ok := goMinor(f[1])
				found = found || ok && n >= minor
			}
		}
		if !found {
			t.Fatalf("no go directive of at least 1.%d in %q", minor, out)
		}
	})
}

// TestRaiseGoDirectiveKeepsVendoring: a module vendored at go 1.12 (its
// vendor/modules.txt without the annotations go 1.14 wants) still builds
// with -mod=vendor once raised to StandInGo, which is why the libFuzzer
// build raises no further: at 1.18 the go command calls it inconsistent.
func TestRaiseGoDirectiveKeepsVendoring(t *testing.T) {
	goCmd, err := GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":                        "module example.com/m\n\ngo 1.12\n\nrequire example.com/dep v0.0.0\n\nreplace example.com/dep => ./dep\n",
		"m.go":                          "package m\n\nimport \"example.com/dep\"\n\nvar Y = dep.X()\n",
		"dep/go.mod":                    "module example.com/dep\n",
		"dep/dep.go":                    "package dep\n\nfunc X() int { return 1 }\n",
		"vendor/modules.txt":            "# example.com/dep v0.0.0 => ./dep\nexample.com/dep\n",
		"vendor/example.com/dep/dep.go": "package dep\n\nfunc X() int { return 1 }\n",
	}
	build := func(minor int) string {
		dir := writeModule(t, files)
		if _, err := RaiseGoDirective(dir, minor); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(goCmd, "build", "-mod=vendor", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%v: %s", err, out)
		}
		return ""
	}
	if failed := build(StandInGo); failed != "" {
		t.Errorf("vendored at go 1.12, raised to 1.%d: %s", StandInGo, failed)
	}
	if failed := build(18); !strings.Contains(failed, "inconsistent vendoring") {
		t.Errorf("raised to 1.18 the vendoring should be inconsistent (else raise further): %q", failed)
	}
}
