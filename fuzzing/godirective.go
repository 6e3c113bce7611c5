package fuzzing

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The go directive of a module copy. Code fleetd writes into a module
// (the libFuzzer stand-in testing package, generated fuzz targets) is
// compiled at the module's language version, which older libraries keep
// at go 1.12 or below: there the stand-in's 0o literals do not compile.
// Both the libFuzzer build of a repository's own target and the harness
// generator raise the copy's directive with RaiseGoDirective.

// StandInGo is the lowest language version (1.StandInGo) the libFuzzer
// harness's generated packages compile at: the stand-in testing package
// uses 0o literals (Go 1.13). The libFuzzer build raises a lower go
// directive to it and no further: from 1.14 on, -mod=vendor checks
// vendor/modules.txt against go.mod more strictly (a module vendored at
// go 1.12 is "inconsistent" at 1.18), and from 1.17 on the module graph is
// pruned.
const StandInGo = 13

// noGoDirective is the language version the go command assumes for a
// go.mod without a go directive.
const noGoDirective = 16

// RaiseGoDirective raises the go directive of dir/go.mod to 1.minor when
// it is lower, or adds one when there is none (the go command then
// assumes 1.16) and 1.16 is lower. restore writes the file back as it was
// (a no-op when nothing changed), for a copy other engines see as the
// repository. Errors: go.mod cannot be read or written.
func RaiseGoDirective(dir string, minor int) (restore func(), err error) {
	restore = func() {}
	p := filepath.Join(dir, "go.mod")
	old, err := os.ReadFile(p)
	if err != nil {
		return restore, fmt.Errorf("raise go directive: %w", err)
	}
	raised, changed := raiseGoLine(old, minor)
	if !changed {
		return restore, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return restore, fmt.Errorf("raise go directive: %w", err)
	}
	if err := os.WriteFile(p, raised, info.Mode().Perm()|0o600); err != nil {
		return restore, fmt.Errorf("raise go directive: %w", err)
	}
	return func() { os.WriteFile(p, old, info.Mode().Perm()|0o600) }, nil
}

// raiseGoLine returns mod with its go directive raised to 1.minor (its
// trailing comment kept), or with one added when it has none and the
// go command's assumption for that (1.16) is lower; changed is false
// when mod is left as it is. A go line that does not read as 1.N (a
// later major version, a malformed one the go command will name) is left
// alone.
func raiseGoLine(mod []byte, minor int) (out []byte, changed bool) {
	lines := bytes.SplitAfter(mod, []byte("\n"))
	for i, l := range lines {
		code, comment, _ := bytes.Cut(l, []byte("//"))
		f := strings.Fields(string(code))
		if len(f) == 0 || f[0] != "go" {
			continue
		}
		if len(f) != 2 {
			return mod, false
		}
		n, ok := goMinor(f[1])
		if !ok || n >= minor {
			return mod, false
		}
		body := bytes.TrimRight(l, "\r\n")
		nl := l[len(body):] // the line's own ending, kept
		repl := "go 1." + strconv.Itoa(minor)
		if len(comment) > 0 {
			repl += " //" + strings.TrimRight(string(comment), "\r\n")
		}
		lines[i] = append([]byte(repl), nl...)
		return bytes.Join(lines, nil), true
	}
	if minor <= noGoDirective {
		return mod, false
	}
	out = append([]byte(nil), mod...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, "go 1."+strconv.Itoa(minor)+"\n"...), true
}

// goMinor reads N from a go version 1.N, 1.N.P, 1.NrcK or 1.NbetaK.
func goMinor(v string) (int, bool) {
	rest, ok := strings.CutPrefix(v, "1.")
	if !ok {
		return 0, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil || end > 4 {
		return 0, false
	}
	return n, true
}
