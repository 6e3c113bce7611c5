package triage

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

func TestWrittenKeys(t *testing.T) {
	var w writtenKeys
	r := rand.New(rand.NewPCG(1, 2))
	want := map[uint64]int32{}
	for i := range 100_000 { // grows from 4,096 slots to 128Ki
		h := r.Uint64() | 1
		j, ok := w.find(h)
		if ok != (want[h] != 0) {
			t.Fatalf("find(%#x) = %v before it was set", h, ok)
		}
		want[h] = int32(i + 1)
		w.set(j, h, int32(i+1), i%2 == 0)
	}
	if w.n != len(want) || 4*w.n > 3*len(w.slots) {
		t.Errorf("%d keys in %d slots, want %d at most three quarters full", w.n, len(w.slots), len(want))
	}
	for h, c := range want {
		j, ok := w.find(h)
		if !ok || w.slots[j].c != c || w.slots[j].pub != ((c-1)%2 == 0) {
			t.Fatalf("find(%#x) = %v, slot %+v, want cluster %d", h, ok, w.slots[j], c)
		}
	}
	for range 1000 {
		if h := r.Uint64() | 1; want[h] == 0 {
			if _, ok := w.find(h); ok {
				t.Fatalf("find(%#x) found a key never set", h)
			}
		}
	}
	// Setting a key again replaces its cluster without counting it twice.
	for h := range want {
		j, _ := w.find(h)
		w.set(j, h, -7, true)
		if j, ok := w.find(h); !ok || w.slots[j].c != -7 || w.n != len(want) {
			t.Errorf("after a second set: %v %+v, %d keys", ok, w.slots[j], w.n)
		}
		break
	}
}

// TestWrittenKeyDecides: reports that differ only in their literals as
// written are one cluster, the first one's, even where normalizing tells
// them apart (lowercased, "D4691" is a hex literal and "D12" a word with a
// digit run), and however many other reports come between them: nothing
// is forgotten, so no placement depends on a cache's evictions.
func TestWrittenKeyDecides(t *testing.T) {
	e := MustEngine(t, Config{})
	report := func(name string) string {
		return fmt.Sprintf("qa/v1 surface=compiler sev=high source=qa-fuzz\ncompiler hangs on a repeated struct field\nrepro: qa_compile {\"source\":\"struct %s { a: u8, a: u8 }\"}", name)
	}
	var texts []string
	texts = append(texts, report("D12"))
	for i := range 30_000 {
		texts = append(texts, fmt.Sprintf("qa/v1 surface=docs sev=low source=qa-ux\nbroken link on page %c%c%c\nrepro: qa_fetch {\"url\":\"/%c%c%c\"}", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26, 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26))
	}
	texts = append(texts, report("D4691"), report("D7"))
	mustAdd(t, e, entries(0, fleetAddr, texts...))
	first, _ := e.ClusterOf(0)
	for _, i := range []uint64{uint64(len(texts) - 2), uint64(len(texts) - 1)} {
		if got, _ := e.ClusterOf(i); got != first {
			t.Errorf("entry %d in cluster %s, the first report of its bug in %s", i, got, first)
		}
	}
	// The literal keys do differ: without the written key the later
	// reports would need similarity to join, and a repro may not join a
	// cluster that holds another one.
	a, _ := e.literalKey(&fleet.Finding{Surface: "compiler", Repro: &fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"struct D12 { a: u8, a: u8 }"}`)}})
	b, _ := e.literalKey(&fleet.Finding{Surface: "compiler", Repro: &fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"struct D4691 { a: u8, a: u8 }"}`)}})
	if a == b {
		t.Error("the two repros have one literal key: the test no longer shows the written key deciding")
	}
}
