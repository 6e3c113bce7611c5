// Package feedwire decodes what a FeedbackLog node sends back: the ABI
// return data of the log's range views (v1's Entry[] with the texts, v2's
// fixed-size records) and the data of v2's FeedbackText log. It is a leaf
// with no go-ethereum import so that it is fuzzed and benchmarked on its
// own: its input comes from whatever node chain.rpc points at.
//
// The decoders check every offset and length against the data before using
// it, copy each text exactly once (into a string), and fail with an error
// wrapping ErrMalformed that says which entry and field was wrong. They
// never panic, whatever the input (FuzzDecodeRange, FuzzDecodeString).
package feedwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed ABI data")

// Entry is one v1 entry as feedbackRange returns it.
type Entry struct {
	Sender [20]byte
	Time   uint64
	Text   string
}

// Record is one v2 entry as recordRange returns it: the text itself is in
// the FeedbackText log, its keccak256 here.
type Record struct {
	Sender   [20]byte
	Time     uint64
	Block    uint64
	TextHash [32]byte
}

const word = 32

// DecodeRange decodes feedbackRange's return data, an ABI-encoded
// tuple(address,uint64,string)[], appending the entries to dst. A text
// longer than maxText bytes is an error (the contract never stores one).
func DecodeRange(dst []Entry, data []byte, maxText int) ([]Entry, error) {
	head, err := offset(data, 0, "array offset")
	if err != nil {
		return dst, err
	}
	n, err := length(data, head, "array length")
	if err != nil {
		return dst, err
	}
	base := head + word // the array's elements start here; offsets are relative to it
	// Each element needs at least its offset word and a 3-word tuple with a
	// zero-length string: bound n by the data before allocating for it.
	if n > (uint64(len(data))-base)/(4*word) {
		return dst, fmt.Errorf("%w: array of %d entries in %d bytes", ErrMalformed, n, len(data))
	}
	dst = growEntries(dst, int(n))
	for i := range n {
		at, err := offset(data, base+i*word, "entry offset")
		if err != nil {
			return dst, fmt.Errorf("entry %d: %w", i, err)
		}
		tuple := base + at
		if tuple > uint64(len(data)) || uint64(len(data))-tuple < 3*word {
			return dst, fmt.Errorf("entry %d: %w: tuple at %d past the end (%d bytes)", i, ErrMalformed, tuple, len(data))
		}
		var e Entry
		if e.Sender, err = address(data[tuple : tuple+word]); err != nil {
			return dst, fmt.Errorf("entry %d: sender: %w", i, err)
		}
		if e.Time, err = Uint64(data[tuple+word : tuple+2*word]); err != nil {
			return dst, fmt.Errorf("entry %d: timestamp: %w", i, err)
		}
		so, err := offset(data, tuple+2*word, "text offset")
		if err != nil {
			return dst, fmt.Errorf("entry %d: %w", i, err)
		}
		if e.Text, err = str(data, tuple+so, maxText); err != nil {
			return dst, fmt.Errorf("entry %d: text: %w", i, err)
		}
		dst = append(dst, e)
	}
	return dst, nil
}

// DecodeRecords decodes recordRange's return data, an ABI-encoded
// tuple(address,uint64,uint64,bytes32)[], appending the records to dst.
func DecodeRecords(dst []Record, data []byte) ([]Record, error) {
	head, err := offset(data, 0, "array offset")
	if err != nil {
		return dst, err
	}
	n, err := length(data, head, "array length")
	if err != nil {
		return dst, err
	}
	base := head + word
	if n > (uint64(len(data))-base)/(4*word) {
		return dst, fmt.Errorf("%w: array of %d records in %d bytes", ErrMalformed, n, len(data))
	}
	for i := range n {
		w := data[base+i*4*word:]
		var r Record
		if r.Sender, err = address(w[:word]); err != nil {
			return dst, fmt.Errorf("record %d: sender: %w", i, err)
		}
		if r.Time, err = Uint64(w[word : 2*word]); err != nil {
			return dst, fmt.Errorf("record %d: timestamp: %w", i, err)
		}
		if r.Block, err = Uint64(w[2*word : 3*word]); err != nil {
			return dst, fmt.Errorf("record %d: block: %w", i, err)
		}
		copy(r.TextHash[:], w[3*word:4*word])
		dst = append(dst, r)
	}
	return dst, nil
}

// DecodeRecord decodes recordAt's return data: one static tuple.
func DecodeRecord(data []byte) (Record, error) {
	if len(data) < 4*word {
		return Record{}, fmt.Errorf("%w: record of %d bytes, want %d", ErrMalformed, len(data), 4*word)
	}
	var r Record
	var err error
	if r.Sender, err = address(data[:word]); err != nil {
		return r, fmt.Errorf("record: sender: %w", err)
	}
	if r.Time, err = Uint64(data[word : 2*word]); err != nil {
		return r, fmt.Errorf("record: timestamp: %w", err)
	}
	if r.Block, err = Uint64(data[2*word : 3*word]); err != nil {
		return r, fmt.Errorf("record: block: %w", err)
	}
	copy(r.TextHash[:], data[3*word:4*word])
	return r, nil
}

// DecodeString decodes ABI data holding one string (the data of a
// FeedbackText log). A string longer than maxLen bytes is an error.
func DecodeString(data []byte, maxLen int) (string, error) {
	at, err := offset(data, 0, "string offset")
	if err != nil {
		return "", err
	}
	return str(data, at, maxLen)
}

// Uint64 decodes a 32-byte word holding a uint64: its top 24 bytes must be zero.
func Uint64(w []byte) (uint64, error) {
	if len(w) != word {
		return 0, fmt.Errorf("%w: word of %d bytes", ErrMalformed, len(w))
	}
	if !zero(w[:24]) {
		return 0, fmt.Errorf("%w: %x does not fit 64 bits", ErrMalformed, w)
	}
	return binary.BigEndian.Uint64(w[24:]), nil
}

func address(w []byte) ([20]byte, error) {
	var a [20]byte
	if !zero(w[:12]) {
		return a, fmt.Errorf("%w: %x is not an address", ErrMalformed, w)
	}
	copy(a[:], w[12:])
	return a, nil
}

// offset reads the word at pos as an offset into data.
func offset(data []byte, pos uint64, what string) (uint64, error) {
	if pos > uint64(len(data)) || uint64(len(data))-pos < word {
		return 0, fmt.Errorf("%w: %s at %d past the end (%d bytes)", ErrMalformed, what, pos, len(data))
	}
	v, err := Uint64(data[pos : pos+word])
	if err != nil || v > uint64(len(data)) {
		return 0, fmt.Errorf("%w: %s at %d points past the end (%d bytes)", ErrMalformed, what, pos, len(data))
	}
	return v, nil
}

// length reads the word at pos as a count no larger than data.
func length(data []byte, pos uint64, what string) (uint64, error) {
	return offset(data, pos, what)
}

// str reads a length-prefixed byte string at pos and copies it once.
func str(data []byte, pos uint64, maxLen int) (string, error) {
	n, err := length(data, pos, "length")
	if err != nil {
		return "", err
	}
	if n > uint64(maxLen) {
		return "", fmt.Errorf("%w: %d bytes, at most %d allowed", ErrMalformed, n, maxLen)
	}
	start := pos + word
	if uint64(len(data))-start < n {
		return "", fmt.Errorf("%w: %d bytes at %d past the end (%d bytes)", ErrMalformed, n, start, len(data))
	}
	return string(data[start : start+n]), nil
}

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// growEntries makes room for n more entries in one allocation.
func growEntries(dst []Entry, n int) []Entry {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]Entry, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}
