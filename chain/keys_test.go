package chain

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFileRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sub", "k.key")
	k, created, err := LoadOrCreateKey(p)
	if err != nil || !created {
		t.Fatalf("LoadOrCreateKey = %v, created %v", err, created)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}
	k2, created, err := LoadOrCreateKey(p)
	if err != nil || created || k2.Address() != k.Address() {
		t.Fatalf("reload: %v created=%v %s vs %s", err, created, k2.Address(), k.Address())
	}
	if err := WriteKeyFile(p, k); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("overwrite = %v, want refusal", err)
	}
	for _, s := range []string{k.String(), k.GoString()} {
		if !strings.Contains(s, k.Address().String()) || strings.Contains(s, secretHex(t, p)) {
			t.Errorf("String leaks or lacks the address: %q", s)
		}
	}
}

// secretHex returns the hex private key stored at p.
func secretHex(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
}

func TestLoadKeyRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	secret := "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"short", secret[:60], 0o600, "want 64 hex digits"},
		{"nothex", strings.Repeat("zz", 32), 0o600, "not hexadecimal"},
		{"zero", strings.Repeat("00", 32), 0o600, "not a valid secp256k1"},
		{"overorder", strings.Repeat("ff", 32), 0o600, "not a valid secp256k1"},
		{"worldreadable", secret, 0o644, "readable by other users"},
		{"json", `{"address":"` + secret + `"}`, 0o600, "want 64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, tc.mode)
			_, err := LoadKey(p)
			if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("LoadKey = %v, want ErrKeyFile naming %s with %q", err, p, tc.want)
			}
			for _, frag := range []string{secret[:16], secret[20:36], "zzzz"} {
				if strings.Contains(err.Error(), frag) {
					t.Errorf("error %q echoes key material", err)
				}
			}
		})
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file = %v, want ErrNotExist", err)
	}
	if _, err := LoadKey(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory = %v", err)
	}
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("0x"+secret+"\n"), 0o600)
	if k, err := LoadKey(good); err != nil || k.Address().String() != "0x2c7536e3605d9c16a7a3d7b1898e529396a65c23" {
		t.Errorf("good key: %v %v", k, err)
	}
}

func TestImportKey(t *testing.T) {
	dir := t.TempDir()
	k, _ := GenerateKey()
	src := filepath.Join(dir, "secret.key")
	if err := WriteKeyFile(src, k); err != nil {
		t.Fatal(err)
	}
	os.Chmod(src, 0o440) // a secret volume under an fsGroup
	dst := filepath.Join(dir, "run", "fleet.key")
	got, err := ImportKey(src, dst)
	if err != nil || got.Address() != k.Address() {
		t.Fatalf("ImportKey = %v, %v", got, err)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Errorf("imported key mode %04o, want 0600", fi.Mode().Perm())
	}
	if loaded, err := LoadKey(dst); err != nil || loaded.Address() != k.Address() {
		t.Errorf("LoadKey(imported) = %v, %v", loaded, err)
	}
	if _, err := ImportKey(src, dst); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("second import over the first = %v", err)
	}
	for _, mode := range []os.FileMode{0o444, 0o460, 0o404, 0o640 | 0o002} {
		os.Chmod(src, mode)
		if _, err := ImportKey(src, filepath.Join(dir, "x"+mode.String())); !errors.Is(err, ErrKeyFile) {
			t.Errorf("mode %04o: %v, want refused", mode, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "junk"), []byte("not a key"), 0o400)
	if _, err := ImportKey(filepath.Join(dir, "junk"), filepath.Join(dir, "y")); !errors.Is(err, ErrKeyFile) || strings.Contains(err.Error(), "not a key") {
		t.Errorf("junk: %v", err)
	}
}
