package contracts

import (
	"bytes"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func TestNameRegistry(t *testing.T) {
	admin, alice, stranger := newKey(t), newKey(t), newKey(t)
	s := mustSim(t, false, admin, alice, stranger)
	nr := NewNameRegistry()
	c := nr.Instance(s.client, s.deploy(admin, &NameRegistryMetaData))
	adminAddr := crypto.PubkeyToAddress(admin.PublicKey)
	aliceAddr := crypto.PubkeyToAddress(alice.PublicKey)
	strangerAddr := crypto.PubkeyToAddress(stranger.PublicKey)

	ownerOf := func(name string) common.Address {
		t.Helper()
		return mustCall(t, c, nr.PackOwnerOf(name), nr.UnpackOwnerOf)
	}
	metadata := func(name string, key [32]byte) []byte {
		t.Helper()
		return mustCall(t, c, nr.PackMetadata(name, key), nr.UnpackMetadata)
	}
	count := func() uint64 {
		t.Helper()
		return mustCall(t, c, nr.PackNameCount(), nr.UnpackNameCount).Uint64()
	}

	if got := mustCall(t, c, nr.PackOwner(), nr.UnpackOwner); got != adminAddr {
		t.Fatalf("owner = %s, want deployer %s", got, adminAddr)
	}

	const name = "alice.qa"
	key := [32]byte(crypto.Keccak256([]byte("avatar")))
	r := s.mustSend(c, alice, nr.PackRegister(name))
	if ev, err := nr.UnpackRegisteredEvent(r.Logs[0]); err != nil || ev.Name != name || ev.Owner != aliceAddr {
		t.Errorf("Registered event %+v, %v", ev, err)
	}
	if got := ownerOf(name); got != aliceAddr {
		t.Errorf("ownerOf = %s, want %s", got, aliceAddr)
	}
	if got := ownerOf("nobody.qa"); got != (common.Address{}) {
		t.Errorf("ownerOf unregistered = %s, want zero", got)
	}

	_, err := s.send(c, stranger, nr.PackRegister(name))
	if e := as[NameRegistryNameTaken](t, revert(t, err, nr.UnpackError)); e.Name != name {
		t.Errorf("NameTaken %+v", e)
	}
	_, err = s.send(c, stranger, nr.PackRegister(""))
	as[NameRegistryEmptyName](t, revert(t, err, nr.UnpackError))

	r = s.mustSend(c, alice, nr.PackSetMetadata(name, key, []byte("ipfs://x")))
	if ev, err := nr.UnpackMetadataSetEvent(r.Logs[0]); err != nil || ev.Name != name || ev.Key != key {
		t.Errorf("MetadataSet event %+v, %v", ev, err)
	}
	if got := metadata(name, key); !bytes.Equal(got, []byte("ipfs://x")) {
		t.Errorf("metadata = %q", got)
	}

	_, err = s.send(c, stranger, nr.PackSetMetadata(name, key, []byte("pwned")))
	if e := as[NameRegistryNotOwner](t, revert(t, err, nr.UnpackError)); e.Name != name || e.Caller != strangerAddr {
		t.Errorf("setMetadata by stranger: %+v, want NotOwner(%q, %s)", e, name, strangerAddr)
	}
	_, err = s.send(c, stranger, nr.PackRelease(name))
	as[NameRegistryNotOwner](t, revert(t, err, nr.UnpackError))
	_, err = s.send(c, stranger, nr.PackSetMetadata("nobody.qa", key, []byte("x")))
	if e := as[NameRegistryNoSuchName](t, revert(t, err, nr.UnpackError)); e.Name != "nobody.qa" {
		t.Errorf("NoSuchName %+v", e)
	}

	r = s.mustSend(c, alice, nr.PackRelease(name))
	if ev, err := nr.UnpackReleasedEvent(r.Logs[0]); err != nil || ev.Name != name || ev.Owner != aliceAddr {
		t.Errorf("Released event %+v, %v", ev, err)
	}
	if got := ownerOf(name); got != (common.Address{}) {
		t.Errorf("ownerOf released = %s", got)
	}
	if got := metadata(name, key); len(got) != 0 {
		t.Errorf("metadata of released name = %q", got)
	}
	_, err = s.send(c, alice, nr.PackRelease(name))
	as[NameRegistryNoSuchName](t, revert(t, err, nr.UnpackError))

	// A new registrant does not inherit the old metadata.
	s.mustSend(c, stranger, nr.PackRegister(name))
	if got := metadata(name, key); len(got) != 0 {
		t.Errorf("metadata after re-registration = %q", got)
	}

	for _, n := range []string{"a.qa", "b.qa", "c.qa"} {
		s.mustSend(c, alice, nr.PackRegister(n))
	}
	if got := count(); got != 4 {
		t.Fatalf("nameCount = %d, want 4", got)
	}

	// Admin functions refuse everyone but the contract owner.
	for what, data := range map[string][]byte{
		"adminResetAll":     nr.PackAdminResetAll(),
		"adminBurn":         nr.PackAdminBurn([]string{"a.qa"}),
		"transferOwnership": nr.PackTransferOwnership(strangerAddr),
	} {
		_, err = s.send(c, stranger, data)
		if e := as[NameRegistryNotAdmin](t, revert(t, err, nr.UnpackError)); e.Caller != strangerAddr {
			t.Errorf("%s by stranger: %+v", what, e)
		}
	}
	if got := count(); got != 4 {
		t.Fatalf("nameCount after refused admin calls = %d, want 4", got)
	}

	s.mustSend(c, admin, nr.PackAdminBurn([]string{"a.qa", "missing.qa", "c.qa"}))
	if ownerOf("a.qa") != (common.Address{}) || ownerOf("c.qa") != (common.Address{}) || ownerOf("b.qa") != aliceAddr {
		t.Error("adminBurn: wrong names burned")
	}
	if got := count(); got != 2 {
		t.Errorf("nameCount after adminBurn = %d, want 2", got)
	}

	s.mustSend(c, admin, nr.PackAdminResetAll())
	if got := count(); got != 0 {
		t.Errorf("nameCount after adminResetAll = %d", got)
	}
	for _, n := range []string{name, "b.qa"} {
		if got := ownerOf(n); got != (common.Address{}) {
			t.Errorf("ownerOf(%q) after adminResetAll = %s", n, got)
		}
	}
	s.mustSend(c, alice, nr.PackRegister("b.qa")) // names are free again

	_, err = s.send(c, admin, nr.PackTransferOwnership(common.Address{}))
	as[NameRegistryZeroOwner](t, revert(t, err, nr.UnpackError))
	s.mustSend(c, admin, nr.PackTransferOwnership(strangerAddr))
	if got := mustCall(t, c, nr.PackOwner(), nr.UnpackOwner); got != strangerAddr {
		t.Errorf("owner after transfer = %s", got)
	}
	_, err = s.send(c, admin, nr.PackAdminResetAll())
	as[NameRegistryNotAdmin](t, revert(t, err, nr.UnpackError))
	s.mustSend(c, stranger, nr.PackAdminResetAll())
}
