package chain

import (
	"context"
	"math/big"
	"testing"
)

func TestDeriveThrowawayKey(t *testing.T) {
	s1, _ := GenerateKey()
	s2, _ := GenerateKey()
	a, err := DeriveThrowawayKey(s1, "r-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := DeriveThrowawayKey(s1, "r-1", 0)
	if a.Address() != again.Address() {
		t.Error("derivation is not deterministic")
	}
	seen := map[string]string{a.Address().String(): "s1 r-1 0"}
	for what, k := range map[string]func() (*Key, error){
		"s1 r-1 1":  func() (*Key, error) { return DeriveThrowawayKey(s1, "r-1", 1) },
		"s1 r-2 0":  func() (*Key, error) { return DeriveThrowawayKey(s1, "r-2", 0) },
		"s2 r-1 0":  func() (*Key, error) { return DeriveThrowawayKey(s2, "r-1", 0) },
		"s1 r-11 0": func() (*Key, error) { return DeriveThrowawayKey(s1, "r-11", 0) },
	} {
		key, err := k()
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[key.Address().String()]; dup {
			t.Errorf("%s and %s derive the same key", what, prev)
		}
		seen[key.Address().String()] = what
	}
	if _, err := DeriveThrowawayKey(nil, "r-1", 0); err == nil {
		t.Error("no sponsor: derived anyway")
	}
	if _, err := DeriveThrowawayKey(s1, "", 0); err == nil {
		t.Error("empty run: derived anyway")
	}
}

func TestThrowawayMarker(t *testing.T) {
	run, n, ok := ParseThrowawayMarker(ThrowawayMarker("r-20261124-210718-9a2fe1", 7))
	if !ok || run != "r-20261124-210718-9a2fe1" || n != 7 {
		t.Errorf("round trip = %q %d %v", run, n, ok)
	}
	for _, bad := range []string{"", "fleetd/throwaway/v1", "fleetd/throwaway/v1 r-1", "fleetd/throwaway/v1 r-1 -1",
		"fleetd/throwaway/v1 r-1 07", "fleetd/throwaway/v1 r-1 1 2", "fleetd/throwaway/v2 r-1 1", "fleetd/throwaway/v1  1"} {
		if _, _, ok := ParseThrowawayMarker([]byte(bad)); ok {
			t.Errorf("ParseThrowawayMarker(%q) accepted", bad)
		}
	}
}

func FuzzParseThrowawayMarker(f *testing.F) {
	f.Add(ThrowawayMarker("r-1", 0))
	f.Add([]byte("fleetd/throwaway/v1 r-x 99999999999999999999"))
	f.Add([]byte{0xff, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		run, n, ok := ParseThrowawayMarker(data)
		if !ok {
			return
		}
		if string(ThrowawayMarker(run, n)) != string(data) {
			t.Fatalf("accepted %q but it does not round-trip (%q %d)", data, run, n)
		}
	})
}

// TestFundingsBy: only marker transactions sent by the sponsor count.
func TestFundingsBy(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	c := mustDial(t, b.url)
	stranger, _ := GenerateKey()
	if _, err := c.Transfer(ctx, b.sponsor, stranger.Address(), ether); err != nil {
		t.Fatal(err)
	}
	k, _ := DeriveThrowawayKey(b.sponsor, "r-20261124-000000-aaaaaa", 3)
	if _, err := c.SendRaw(ctx, b.sponsor, k.Address(), ThrowawayMarker("r-20261124-000000-aaaaaa", 3), big.NewInt(12345)); err != nil {
		t.Fatal(err)
	}
	// A stranger's transaction with a marker is not the sponsor's funding.
	if _, err := c.SendRaw(ctx, stranger, k.Address(), ThrowawayMarker("r-20261124-000000-bbbbbb", 0), big.NewInt(1)); err != nil {
		t.Fatal(err)
	}
	head, _ := c.BlockNumber(ctx)
	got, err := c.FundingsBy(ctx, b.sponsor.Address(), 0, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Run != "r-20261124-000000-aaaaaa" || got[0].N != 3 || got[0].To != k.Address() || got[0].Wei.Int64() != 12345 {
		t.Fatalf("FundingsBy = %+v", got)
	}
}
