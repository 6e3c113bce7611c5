package fixer

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/clip"
)

// MaxDiff bounds a proposed patch: a focused fix is small.
const MaxDiff = 64 << 10

// ErrBadDiff is wrapped for a proposed patch that is not a usable unified
// diff; the model is told what was wrong and may try again.
var ErrBadDiff = errors.New("not a usable unified diff")

// RefusedError is a patch fleetd will not apply: it touches a path it may
// not (outside the grounded set, a test file, test data, CI configuration)
// or changes files in a way a focused fix never needs.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("patch refused: %s: %s", e.Path, e.Reason)
}

// DiffFiles returns the repository paths a git-style unified diff touches
// (old and new names, from diff --git, ---/+++ and rename/copy lines), in
// order of appearance. It fails with ErrBadDiff on anything it cannot read
// with certainty: quoted or absolute paths, "..", paths without the a/ and
// b/ prefixes, no hunks; and with a *RefusedError on binary patches,
// renames, copies, deletions, new files and mode changes, which a focused
// fix does not need and which would let a patch reach files the hunks do
// not show.
func DiffFiles(diff string) ([]string, error) {
	if len(diff) > MaxDiff {
		return nil, fmt.Errorf("%w: %d bytes, max %d", ErrBadDiff, len(diff), MaxDiff)
	}
	if strings.ContainsRune(diff, 0) {
		return nil, fmt.Errorf("%w: holds a NUL byte", ErrBadDiff)
	}
	var files []string
	add := func(p string) {
		if !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	hunks := 0
	var minus, plus string
	for _, line := range strings.Split(diff, "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case strings.HasPrefix(line, "diff --git "):
			rest := strings.TrimPrefix(line, "diff --git ")
			if strings.Contains(rest, `"`) {
				return nil, fmt.Errorf("%w: quoted path in %q", ErrBadDiff, clip.Text(line, 120))
			}
			// "a/X b/X": X may hold spaces when both halves agree; two
			// different names must be split at the one " b/".
			n := len(rest)
			var a, b string
			switch {
			case n >= 7 && n%2 == 1 && rest[n/2] == ' ' && rest[2:n/2] == rest[n/2+3:]:
				a, b = rest[:n/2], rest[n/2+1:]
			case strings.Count(rest, " b/") == 1:
				i := strings.Index(rest, " b/")
				a, b = rest[:i], rest[i+1:]
			default:
				return nil, fmt.Errorf("%w: cannot read %q (want diff --git a/PATH b/PATH)", ErrBadDiff, clip.Text(line, 120))
			}
			pa, err := diffPath(a, "a/")
			if err != nil {
				return nil, err
			}
			pb, err := diffPath(b, "b/")
			if err != nil {
				return nil, err
			}
			if pa != pb {
				return nil, &RefusedError{Path: pa, Reason: "renames " + pa + " to " + pb}
			}
			add(pa)
		case strings.HasPrefix(line, "--- "):
			minus = strings.TrimPrefix(line, "--- ")
		case strings.HasPrefix(line, "+++ "):
			plus = strings.TrimPrefix(line, "+++ ")
			if i := strings.IndexByte(minus, '\t'); i >= 0 {
				minus = minus[:i]
			}
			if i := strings.IndexByte(plus, '\t'); i >= 0 {
				plus = plus[:i]
			}
			if minus == "/dev/null" {
				return nil, &RefusedError{Path: strings.TrimPrefix(plus, "b/"), Reason: "creates a new file"}
			}
			if plus == "/dev/null" {
				return nil, &RefusedError{Path: strings.TrimPrefix(minus, "a/"), Reason: "deletes a file"}
			}
			pa, err := diffPath(minus, "a/")
			if err != nil {
				return nil, err
			}
			pb, err := diffPath(plus, "b/")
			if err != nil {
				return nil, err
			}
			if pa != pb {
				return nil, &RefusedError{Path: pa, Reason: "renames " + pa + " to " + pb}
			}
			add(pa)
		case strings.HasPrefix(line, "@@ "):
			if minus == "" || plus == "" {
				return nil, fmt.Errorf("%w: a hunk before its ---/+++ header", ErrBadDiff)
			}
			hunks++
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "rename to "),
			strings.HasPrefix(line, "copy from "), strings.HasPrefix(line, "copy to "):
			return nil, &RefusedError{Path: strings.SplitN(line, " ", 3)[2], Reason: "renames or copies a file"}
		case strings.HasPrefix(line, "new file mode"), strings.HasPrefix(line, "deleted file mode"),
			strings.HasPrefix(line, "old mode"), strings.HasPrefix(line, "new mode"):
			return nil, &RefusedError{Path: lastPath(files), Reason: "creates, deletes or changes the mode of a file"}
		case strings.HasPrefix(line, "GIT binary patch"), strings.HasPrefix(line, "Binary files "):
			return nil, &RefusedError{Path: lastPath(files), Reason: "a binary patch"}
		}
	}
	if hunks == 0 || len(files) == 0 {
		return nil, fmt.Errorf("%w: no file header and hunk (want diff --git a/PATH b/PATH, --- a/PATH, +++ b/PATH, @@ ... @@)", ErrBadDiff)
	}
	return files, nil
}

func lastPath(files []string) string {
	if len(files) == 0 {
		return "(unknown)"
	}
	return files[len(files)-1]
}

// diffPath strips prefix from a diff path and checks what is left is a
// plain relative path.
func diffPath(p, prefix string) (string, error) {
	rest, ok := strings.CutPrefix(p, prefix)
	if !ok {
		return "", fmt.Errorf("%w: path %q lacks the %s prefix (write git-style diffs)", ErrBadDiff, clip.Text(p, 100), prefix)
	}
	if rest == "" || strings.HasPrefix(rest, "/") || strings.Contains(rest, `\`) || strings.ContainsAny(rest, "\t\r\n") {
		return "", fmt.Errorf("%w: bad path %q", ErrBadDiff, clip.Text(p, 100))
	}
	clean := path.Clean(rest)
	if clean != rest || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%w: path %q is not a clean relative path", ErrBadDiff, clip.Text(p, 100))
	}
	return clean, nil
}

// CheckDiff reads a proposed patch with DiffFiles and refuses it unless
// every path it touches is in grounded and not Protected. It returns the
// paths touched.
func CheckDiff(diff string, grounded []string) ([]string, error) {
	files, err := DiffFiles(diff)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if why := Protected(f); why != "" {
			return nil, &RefusedError{Path: f, Reason: why + ": a patch may not touch it"}
		}
		if !slices.Contains(grounded, f) {
			return nil, &RefusedError{Path: f, Reason: "outside the grounded set (the files the failing test's stack frames point at: " + strings.Join(grounded, ", ") + ")"}
		}
	}
	return files, nil
}
