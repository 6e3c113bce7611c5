package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
)

// TestFirstFatalUp: a fatal line failed only because the node did not
// answer is listed as down, not fatal; the first other failed fatal line is.
func TestFirstFatalUp(t *testing.T) {
	cs := []Check{
		{Name: "config", OK: true, Fatal: true},
		{Name: "rpc", Fatal: true, NodeDown: true},
		{Name: "corpus", Warn: true},
		{Name: "fleet key", Fatal: true, Detail: "missing"},
		{Name: "sponsor key", Fatal: true},
	}
	bad, fatal, down := FirstFatalUp(cs)
	if !fatal || bad.Name != "fleet key" || len(down) != 1 || down[0].Name != "rpc" {
		t.Errorf("FirstFatalUp = %+v %v %+v, want fleet key, true, [rpc]", bad, fatal, down)
	}
	if c, ok := FirstFatal(cs); !ok || c.Name != "rpc" {
		t.Errorf("FirstFatal = %+v %v, want rpc", c, ok)
	}
	if _, fatal, down := FirstFatalUp(cs[:3]); fatal || len(down) != 1 {
		t.Errorf("node down only: fatal %v down %d, want false 1", fatal, len(down))
	}
}

// TestPrint: marks, sanitized detail, the fix only on a failed line, and
// the count of failures (warnings and lines not checked do not count).
func TestPrint(t *testing.T) {
	var b strings.Builder
	n := Print(&b, func(s string) string { return strings.ReplaceAll(s, "\x1b", "?") }, []Check{
		{Name: "a", OK: true, Detail: "fine", Fix: "never shown"},
		{Name: "bbb", Detail: "bad\x1b[31m", Fix: "do x"},
		{Name: "c", Warn: true, Detail: "fallback"},
		{Name: "d", NotChecked: true, Detail: "not checked"},
	})
	want := "✓ a    fine\n✗ bbb  bad?[31m — fix: do x\n! c    fallback\n– d    not checked\n"
	if n != 1 || b.String() != want {
		t.Errorf("Print = %d\n%q, want 1\n%q", n, b.String(), want)
	}
}

// TestKey: unset, missing, an unsafe file mode (the fix is chmod) and a
// good key file.
func TestKey(t *testing.T) {
	if c, k := Key("fleet key", "", "chain.fleet_key_file", "fleetd keys new"); c.OK || k != nil || !strings.Contains(c.Detail, "is not set") {
		t.Errorf("unset: %+v", c)
	}
	dir := t.TempDir()
	if c, k := Key("fleet key", filepath.Join(dir, "none"), "chain.fleet_key_file", "fleetd keys new"); c.OK || k != nil || !strings.Contains(c.Fix, "fleetd keys new") {
		t.Errorf("missing: %+v", c)
	}
	key, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "k")
	if err := chain.WriteKeyFile(path, key); err != nil {
		t.Fatal(err)
	}
	c, k := Key("fleet key", path, "chain.fleet_key_file", "fleetd keys new")
	if !c.OK || k == nil || k.Address() != key.Address() || !strings.Contains(c.Detail, key.Address().String()) {
		t.Errorf("good: %+v", c)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, k := Key("fleet key", path, "chain.fleet_key_file", "fleetd keys new"); c.OK || k != nil || c.Fix != "chmod 600 "+path {
		t.Errorf("mode 644: %+v", c)
	}
}
