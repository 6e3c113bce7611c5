package daemon

import (
	"strings"
	"testing"
)

// TestParseNameRecord: the fleet name's metadata reads back as written;
// every other value is refused with what was wrong; fleet names are checked.
func TestParseNameRecord(t *testing.T) {
	good := NameRecord{Set: "0123456789abcdef", Log: "0x00000000000000000000000000000000000000aa", Entry: 7}
	if r, err := ParseNameRecord(good.Bytes()); err != nil || r != good {
		t.Fatalf("round trip: %+v, %v", r, err)
	}
	for _, tc := range []struct{ in, want string }{
		{``, "no specialist set"},
		{`{"set":"0123456789abcdef","log":"0x00000000000000000000000000000000000000aa","entry":7,"x":1}`, "unknown field"},
		{`{"set":"0123","log":"0x00000000000000000000000000000000000000aa","entry":7}`, "not a set hash"},
		{`{"set":"0123456789abcdef","log":"nowhere","entry":7}`, "metadata log"},
		{`{"set":"0123456789abcdef","log":"0x00000000000000000000000000000000000000aa","entry":-1}`, "not the specialist record"},
		{`{"set":"0123456789abcdef","log":"0x00000000000000000000000000000000000000aa","entry":7} {}`, "data after"},
		{`<h1>hello</h1>`, "not the specialist record"},
		{strings.Repeat(" ", 2000), "at most 1024"},
	} {
		if _, err := ParseNameRecord([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60q: %v, want %q", tc.in, err, tc.want)
		}
	}
	for _, n := range []string{"qa-r-1-0", "Grove", "ab", "a b", strings.Repeat("x", 65)} {
		if ValidFleetName(n) == nil {
			t.Errorf("fleet name %q accepted", n)
		}
	}
	if err := ValidFleetName("grove-fleet"); err != nil {
		t.Error(err)
	}
}

// FuzzParseNameRecord: whatever a name's owner wrote, ParseNameRecord
// returns a record that writes back as itself, or an error.
func FuzzParseNameRecord(f *testing.F) {
	f.Add([]byte(`{"set":"0123456789abcdef","log":"0x00000000000000000000000000000000000000aa","entry":7}`))
	f.Add([]byte(`{"set":"0123456789abcdef","log":"0x00000000000000000000000000000000000000AA","entry":1e3}`))
	f.Add([]byte(`{"set":null}`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseNameRecord(b)
		if err != nil {
			return
		}
		back, err := ParseNameRecord(r.Bytes())
		if err != nil || back != r {
			t.Fatalf("%q parsed as %+v, which writes back as %q: %+v, %v", b, r, r.Bytes(), back, err)
		}
	})
}
