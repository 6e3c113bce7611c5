package harness

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fuzzing"
)

// Verdicts of Judge.
const (
	Library = "library" // a bug of the target module: a finding
	Misuse  = "harness" // the harness's own crash or a misuse it made: counted, never posted
	Outside = "outside" // the innermost frame is in another module: not this repository's bug
	Unknown = "unknown" // no Go stack to judge (a hang, an exit): not posted
)

// Verdict is what Judge decided about one crash, and why.
type Verdict struct {
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
	Frame   string `json:"frame,omitempty"` // the innermost frame outside the runtime and the standard library
	File    string `json:"file,omitempty"`  // its file:line
}

// frame is one function of a Go traceback and its file:line.
type frame struct{ fn, file string }

var (
	frameFunc = regexp.MustCompile(`^([^\s()]+(?:\([^)]*\))?[^\s(]*)\(.*\)$`)
	frameFile = regexp.MustCompile(`^(\S+\.go):(\d+)`)
)

// frames reads the first goroutine's stack of a Go panic in out (as go
// test prints it, indented or not), innermost first, starting at the
// panic's site: the frames above the runtime's panic call are the
// recovering harness's and are dropped.
func frames(out string) []frame {
	lines := strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n")
	var fs []frame
	in := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, ":") {
			if in {
				break
			}
			in = true
			continue
		}
		if !in {
			continue
		}
		if l == "" || strings.HasPrefix(l, "created by ") {
			break
		}
		m := frameFunc.FindStringSubmatch(l)
		if m == nil || i+1 >= len(lines) {
			continue
		}
		fm := frameFile.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
		if fm == nil {
			continue
		}
		fs = append(fs, frame{fn: m[1], file: fm[1] + ":" + fm[2]})
		i++
	}
	// The innermost frames of a recovered panic are the harness's
	// recover (runtime/debug.Stack, testing's tRunner.func1) and the
	// runtime's panic; the site is below the last "panic" frame.
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].fn == "panic" || strings.HasPrefix(fs[i].fn, "runtime.gopanic") || fs[i].fn == "runtime.panicmem" || strings.HasPrefix(fs[i].fn, "runtime.sigpanic") {
			return fs[i+1:]
		}
	}
	return fs
}

// stdFrame reports a frame of the runtime or the standard library: its
// import path has no dot in its first element.
func stdFrame(fn string) bool {
	pkg := fn
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		if j := strings.IndexByte(pkg[i:], '.'); j >= 0 {
			pkg = pkg[:i+j]
		}
	} else if j := strings.IndexByte(pkg, '.'); j >= 0 {
		pkg = pkg[:j]
	}
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".")
}

var promisedPanic = regexp.MustCompile(`(?i)\bpanics?\b`)

// Judge decides whether a reproduced crash of e's harness (the go engine's
// or libFuzzer's output: the panic and its stack) is a bug of module mod.
// outcome is the replay's (fuzzing.Crashed, TimedOut, ...). A crash is the
// library's when its innermost frame outside the runtime and the standard
// library is in mod and not in the harness, unless it is a misuse: a nil
// dereference through a zero-value receiver (the type's constructor was
// skipped: it has none the harness could call) or with an argument built
// as a struct literal that leaves nil fields (ZeroArg), an explicit panic that
// e's doc comment promises, or an explicit panic in the internal package
// of an entry the harness called directly (the module's own callers keep
// its contract). Anything without a Go stack is Unknown.
func Judge(e *Entry, mod, outcome, out string) Verdict {
	if outcome != "crashed" {
		return Verdict{Verdict: Unknown, Why: fmt.Sprintf("a %s has no stack to judge whose bug it is", outcome)}
	}
	var site *frame
	for _, f := range frames(out) {
		if !stdFrame(f.fn) {
			site = &f
			break
		}
	}
	if site == nil {
		return Verdict{Verdict: Unknown, Why: "no frame outside the runtime and the standard library"}
	}
	v := Verdict{Frame: site.fn, File: site.file}
	pkg := fuzzing.GoPackage(site.fn)
	switch {
	case strings.Contains(site.file, "/"+Dir+"/") || strings.HasPrefix(pkg, mod+"/"+Dir+"/") || strings.Contains(site.fn, ".Fuzz") && strings.HasSuffix(site.file, "_test.go"):
		v.Verdict, v.Why = Misuse, "the crash is in the harness's own code"
		return v
	case !within(pkg, mod):
		v.Verdict, v.Why = Outside, fmt.Sprintf("the innermost frame is in %s, outside the module %s", pkg, mod)
		return v
	}
	msg := panicMessage(out)
	switch {
	case e != nil && e.ZeroRecv && strings.Contains(msg, "nil pointer dereference"):
		v.Verdict, v.Why = Misuse, "a nil dereference through a zero-value receiver: the type's constructor was skipped"
	case e != nil && e.ZeroArg && strings.Contains(msg, "nil pointer dereference"):
		// go-org's (*HTMLWriter).Before(d *Document) on a Document literal
		// whose Configuration the harness left nil.
		v.Verdict, v.Why = Misuse, "a nil dereference with an argument built as a struct literal whose pointer, map or interface fields the harness left nil: the type's constructor was skipped"
	case e != nil && !strings.Contains(msg, "runtime error") && msg != "" && promisedPanic.MatchString(e.Doc):
		v.Verdict, v.Why = Misuse, fmt.Sprintf("%s's doc comment promises a panic: %s", e.Name, clip.Text(strings.TrimSpace(e.Doc), 160))
	case e != nil && !strings.Contains(msg, "runtime error") && msg != "" && internalPkg(e.Pkg) && internalPkg(pkg):
		// toml v1.0.0's internal/tag.Add panics "Unknown type: *interface {}"
		// on the value the harness made up: the module's own callers keep
		// an internal function's contract, and its explicit panic says so.
		v.Verdict, v.Why = Misuse, fmt.Sprintf("an explicit panic (%s) in the internal package %s, whose function the harness called directly: the module's callers keep its contract", clip.Text(msg, 120), e.Pkg)
	default:
		// The file by its base name: the full path is the scratch copy's,
		// and a finding's summary clips the why (the frame keeps it).
		v.Verdict, v.Why = Library, fmt.Sprintf("the innermost frame %s (%s) is in the module %s", site.fn, path.Base(site.file), mod)
	}
	return v
}

// internalPkg reports an import path under an internal/ directory.
func internalPkg(p string) bool {
	return strings.Contains(p+"/", "/internal/")
}

// panicMessage is the last "panic: " message of a Go crash output.
func panicMessage(out string) string {
	msg := ""
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, "panic: "); i >= 0 && (i == 0 || strings.HasSuffix(l[:i], ": ")) {
			msg = strings.TrimSuffix(l[i+len("panic: "):], " [recovered]")
		}
	}
	return msg
}
