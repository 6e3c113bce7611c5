package testbed

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestContractBuildUpToDate recompiles FlawedRegistry.sol with the pinned
// solc of chain/contracts and compares the output with the committed build.
// It needs node and `npm ci` in chain/contracts; without them, or with
// -short, it skips.
func TestContractBuildUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("recompiling with solcjs takes ~10 s")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH; cannot recompile FlawedRegistry.sol")
	}
	contracts := filepath.Join("..", "chain", "contracts")
	if _, err := os.Stat(filepath.Join(contracts, "node_modules", "solc", "package.json")); err != nil {
		t.Skip("chain/contracts/node_modules/solc missing (run npm ci there); cannot recompile FlawedRegistry.sol")
	}
	out := t.TempDir()
	src, err := filepath.Abs(filepath.Join("contracts", "FlawedRegistry.sol"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "compile.js", "--out", out, src)
	cmd.Dir = contracts
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile.js: %v\n%s", err, msg)
	}
	fresh, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil || len(fresh) == 0 {
		t.Fatalf("compile.js wrote nothing: %v", err)
	}
	committed, _ := filepath.Glob(filepath.Join("contracts", "build", "*"))
	if len(committed) != len(fresh) {
		t.Errorf("contracts/build holds %d files, compile.js writes %d; run go generate ./testbed/", len(committed), len(fresh))
	}
	for _, f := range fresh {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join("contracts", "build", filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("contracts/build/%s is stale (%v); run go generate ./testbed/", filepath.Base(f), err)
		}
	}
	if !bytes.Equal(bytes.TrimSpace(registryBinHex), bytes.TrimSpace(mustRead(t, filepath.Join(out, "FlawedRegistry.bin")))) {
		t.Error("the embedded bytecode is not the fresh build")
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
