package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// LoadDir parses every *.yaml file directly in dir of fsys, in name order,
// with parse, for the checks whose rules are data (agent families,
// registry properties): kind names one item and kinds many (e.g. "family",
// "families"), and name gives an item's name, which two files may not
// share. The error names each bad
// file; the good ones are still returned.
func LoadDir[T any](fsys fs.FS, dir, kind, kinds string, parse func(file string, b []byte) (T, error), name func(T) string) ([]T, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", kinds, dir, err)
	}
	var out []T
	var errs []error
	names := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		file := path.Join(dir, e.Name())
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			errs = append(errs, fmt.Errorf("load %s: %w", kinds, err))
			continue
		}
		v, err := parse(file, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n := name(v)
		if prev, dup := names[n]; dup {
			errs = append(errs, fmt.Errorf("%s: %s %q is also in %s", file, kind, n, prev))
			continue
		}
		names[n] = file
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}
