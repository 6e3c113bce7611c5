// Package record reads a toy record format with a planted bug, the
// fixture of the libfuzzer engine's tests: a length byte n (at least 8),
// then n payload bytes; a payload whose bytes 4 to 8 hold the big-endian
// magic "FLTD" writes to a nil map. Blind mutation has to guess 32 bits
// behind a length check; comparison feedback reads them off the compare.
package record

import "encoding/binary"

// magic is "FLTD".
const magic = 0x464c5444

// Parse returns the payload length, or 0 for a short record.
func Parse(b []byte) int {
	if len(b) < 1 {
		return 0
	}
	n := int(b[0])
	if n < 8 || len(b) < 1+n {
		return 0
	}
	p := b[1 : 1+n]
	if binary.BigEndian.Uint32(p[4:8]) == magic {
		var seen map[string]int
		seen["magic"]++
	}
	return n
}
