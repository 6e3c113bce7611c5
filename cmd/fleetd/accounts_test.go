package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestLoadAccounts: target.auth.accounts' key files load by role; a file
// other users can read or a missing one is an error naming the role and
// never the key.
func TestLoadAccounts(t *testing.T) {
	dir := t.TempDir()
	k, _ := chain.GenerateKey()
	if err := chain.WriteKeyFile(filepath.Join(dir, "admin.key"), k); err != nil {
		t.Fatal(err)
	}
	resolve := func(p string) string { return filepath.Join(dir, p) }
	got, err := loadAccounts(&fleet.Auth{Accounts: map[string]string{"admin": "admin.key"}}, resolve)
	if err != nil || got["admin"].Address() != k.Address() {
		t.Fatalf("loadAccounts: %v, %v", got, err)
	}
	if got, err := loadAccounts(nil, resolve); got != nil || err != nil {
		t.Errorf("no auth: %v, %v", got, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "admin.key"))
	os.WriteFile(filepath.Join(dir, "open.key"), raw, 0o644)
	for file, want := range map[string]string{"open.key": "readable by other users", "gone.key": "no such file"} {
		_, err := loadAccounts(&fleet.Auth{Accounts: map[string]string{"moderator": file}}, resolve)
		if err == nil || !strings.Contains(err.Error(), "target.auth.accounts.moderator") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", file, err)
		}
		if err != nil && strings.Contains(strings.ToLower(err.Error()), strings.ToLower(strings.TrimSpace(strings.TrimPrefix(string(raw), "0x")))) {
			t.Errorf("%s: the error echoes the key", file)
		}
	}
}
