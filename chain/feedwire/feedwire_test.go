package feedwire

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The encoders below follow the ABI specification by hand, so the decoders
// are checked against an independent writer; chain's tests check them
// against go-ethereum's encoder and a real node as well.

func u64word(v uint64) []byte {
	w := make([]byte, word)
	binary.BigEndian.PutUint64(w[24:], v)
	return w
}

func addrWord(a [20]byte) []byte {
	w := make([]byte, word)
	copy(w[12:], a[:])
	return w
}

func strBytes(s string) []byte {
	out := u64word(uint64(len(s)))
	padded := make([]byte, (len(s)+word-1)/word*word)
	copy(padded, s)
	return append(out, padded...)
}

// encodeRange is tuple(address,uint64,string)[] as a function's only return value.
func encodeRange(es []Entry) []byte {
	var tuples [][]byte
	for _, e := range es {
		t := append(addrWord(e.Sender), u64word(e.Time)...)
		t = append(t, u64word(3*word)...)
		t = append(t, strBytes(e.Text)...)
		tuples = append(tuples, t)
	}
	out := u64word(word)
	out = append(out, u64word(uint64(len(es)))...)
	at := uint64(len(es) * word)
	for _, t := range tuples {
		out = append(out, u64word(at)...)
		at += uint64(len(t))
	}
	for _, t := range tuples {
		out = append(out, t...)
	}
	return out
}

func encodeRecords(rs []Record) []byte {
	out := u64word(word)
	out = append(out, u64word(uint64(len(rs)))...)
	for _, r := range rs {
		out = append(out, addrWord(r.Sender)...)
		out = append(out, u64word(r.Time)...)
		out = append(out, u64word(r.Block)...)
		out = append(out, r.TextHash[:]...)
	}
	return out
}

func sampleEntries() []Entry {
	return []Entry{
		{Sender: [20]byte{1, 2, 3}, Time: 1764000000, Text: "qa/v1 source=qa-smoke sev=low surface=docs\ndead link"},
		{Sender: [20]byte{19: 0xff}, Time: 1, Text: strings.Repeat("é", 40)}, // 80 bytes: three words
		{Sender: [20]byte{}, Time: 1<<64 - 1, Text: "x"},
	}
}

func TestDecodeRange(t *testing.T) {
	want := sampleEntries()
	got, err := DecodeRange(nil, encodeRange(want), 2048)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeRange (-want +got):\n%s", diff)
	}
	// Appending keeps what dst held.
	got, err = DecodeRange(got[:1], encodeRange(want[2:]), 2048)
	if err != nil || len(got) != 2 || got[1] != want[2] || got[0] != want[0] {
		t.Errorf("append: %v, %+v", err, got)
	}
	empty, err := DecodeRange(nil, encodeRange(nil), 2048)
	if err != nil || len(empty) != 0 {
		t.Errorf("empty range: %v, %d entries", err, len(empty))
	}
}

func TestDecodeRangeRefusesMalformed(t *testing.T) {
	good := encodeRange(sampleEntries())
	set := func(b []byte, pos int, v uint64) []byte {
		out := append([]byte(nil), b...)
		copy(out[pos:pos+word], u64word(v))
		return out
	}
	firstTuple := 2*word + 3*word // head, length, three offsets
	for _, tc := range []struct {
		name string
		data []byte
		max  int
		want string
	}{
		{"empty", nil, 2048, "array offset at 0 past the end"},
		{"offset past end", set(good, 0, 1<<20), 2048, "array offset at 0 points past the end"},
		{"huge count", set(good, word, 1<<40), 2048, "array length"},
		{"count beyond data", set(good, word, 50), 2048, "array of 50 entries"},
		{"entry offset past end", set(good, 2*word, uint64(len(good))), 2048, "entry 0: malformed ABI data: tuple"},
		{"dirty address", func() []byte { b := append([]byte(nil), good...); b[firstTuple] = 1; return b }(), 2048, "entry 0: sender"},
		{"timestamp over 64 bits", func() []byte { b := append([]byte(nil), good...); b[firstTuple+word+3] = 1; return b }(), 2048, "entry 0: timestamp"},
		{"text too long", good, 10, "entry 0: text: malformed ABI data: 52 bytes, at most 10"},
		{"text past end", good[:len(good)-word], 2048, "entry 2: text"},
		{"truncated", good[:firstTuple+word], 2048, "array of 3 entries in 192 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRange(nil, tc.data, tc.max)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrMalformed mentioning %q", err, tc.want)
			}
		})
	}
}

func TestDecodeRecords(t *testing.T) {
	want := []Record{
		{Sender: [20]byte{7}, Time: 1764000000, Block: 12, TextHash: [32]byte{1, 2, 3, 31: 9}},
		{Sender: [20]byte{19: 1}, Time: 2, Block: 1 << 40, TextHash: [32]byte{}},
	}
	got, err := DecodeRecords(nil, encodeRecords(want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeRecords (-want +got):\n%s", diff)
	}
	one, err := DecodeRecord(encodeRecords(want)[2*word:])
	if err != nil || one != want[0] {
		t.Errorf("DecodeRecord = %+v, %v", one, err)
	}
	if _, err := DecodeRecords(nil, encodeRecords(want)[:5*word]); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated records: %v", err)
	}
	if _, err := DecodeRecord(make([]byte, 3*word)); !errors.Is(err, ErrMalformed) {
		t.Errorf("short record: %v", err)
	}
}

func TestDecodeString(t *testing.T) {
	data := append(u64word(word), strBytes("hello, log")...)
	s, err := DecodeString(data, 2048)
	if err != nil || s != "hello, log" {
		t.Errorf("DecodeString = %q, %v", s, err)
	}
	if _, err := DecodeString(data, 3); !errors.Is(err, ErrMalformed) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := DecodeString(data[:2*word], 2048); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated: %v", err)
	}
}

// FuzzDecodeRange feeds arbitrary bytes to every decoder: none may panic,
// and whatever DecodeRange accepts must re-encode to the same entries.
func FuzzDecodeRange(f *testing.F) {
	f.Add(encodeRange(sampleEntries()))
	f.Add(encodeRange(nil))
	f.Add(encodeRecords([]Record{{Time: 1, Block: 2}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeRange(nil, data, 2048)
		if err == nil {
			again, err := DecodeRange(nil, encodeRange(es), 2048)
			if err != nil || !cmp.Equal(es, again) {
				t.Errorf("re-encoded entries decode to %+v, %v; want %+v", again, err, es)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v does not wrap ErrMalformed", err)
		}
		_, _ = DecodeRecords(nil, data)
		_, _ = DecodeRecord(data)
	})
}

// FuzzDecodeString checks the FeedbackText data decoder never panics and
// never returns more than the limit.
func FuzzDecodeString(f *testing.F) {
	f.Add(append(u64word(word), strBytes("qa/v1 source=qa-ux sev=low surface=docs\nx")...))
	f.Add(u64word(1 << 62))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeString(data, 2048)
		if err == nil && len(s) > 2048 {
			t.Errorf("returned %d bytes, limit 2048", len(s))
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v does not wrap ErrMalformed", err)
		}
	})
}

// TestSeedCorpusCommitted keeps the committed corpus in place: the fuzz
// targets' seeds live in testdata/fuzz as well as in code.
func TestSeedCorpusCommitted(t *testing.T) {
	for _, target := range []string{"FuzzDecodeRange", "FuzzDecodeString"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
		if len(files) == 0 {
			t.Errorf("no committed corpus for %s", target)
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil || !strings.HasPrefix(string(b), "go test fuzz v1\n") {
				t.Errorf("%s: not a corpus file (%v)", p, err)
			}
		}
	}
}
