// Package record parses "key=value;key=value" records.
package record

import (
	"errors"
	"strings"
)

// Record is a parsed record.
type Record map[string]string

// Parse parses b.
func Parse(b []byte) (Record, error) {
	r := Record{}
	for _, field := range strings.Split(string(b), ";") {
		if field == "" {
			continue
		}
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return nil, errors.New("no = in field")
		}
		switch {
		case k == "":
			return nil, errors.New("empty key")
		case strings.HasPrefix(k, "x-"):
			k = strings.ToLower(k)
		case len(v) > 2 && v[0] == '"' && v[len(v)-1] == '"':
			v = v[1 : len(v)-1]
		}
		r[k] = v
	}
	return r, nil
}

func normalize(r Record) string {
	var b strings.Builder
	for k, v := range r {
		b.WriteString(k + "=" + v + ";")
	}
	return b.String()
}
