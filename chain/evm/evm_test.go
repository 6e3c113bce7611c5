package evm

import (
	"bytes"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readBuild reads a committed build output of chain/contracts (a test may
// read it as a file; importing that package would break the layer rule).
func readBuild(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "contracts", "build", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

func hexBytes(t testing.TB, s []byte) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(string(s), "0x"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSelectorsOfCompiledContracts(t *testing.T) {
	for _, c := range []string{"NameRegistry", "FeedbackLog", "FeedbackLogV2", "../../../fixtures/registries/contracts/build/GuildRegistry"} {
		t.Run(filepath.Base(c), func(t *testing.T) {
			fns, err := ParseABI(readBuild(t, c+".abi"))
			if err != nil {
				t.Fatal(err)
			}
			// The .bin is creation code: the constructor followed by the
			// runtime code, whose dispatcher holds every selector.
			code, err := Selectors(hexBytes(t, readBuild(t, c+".bin")))
			if err != nil {
				t.Fatal(err)
			}
			if code.Metadata == 0 {
				t.Errorf("no metadata trailer found")
			}
			for _, f := range fns {
				if !slices.Contains(code.Selectors, f.Selector()) {
					t.Errorf("%s (%x) not read from the dispatcher", f.Signature, f.Selector())
				}
			}
			if len(code.Selectors) != len(fns) {
				t.Errorf("read %d selectors, the ABI has %d functions", len(code.Selectors), len(fns))
			}
		})
	}
}

func TestSelectorsBadCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want error
		text string
	}{
		{"empty", nil, ErrNoCode, "no code"},
		{"no calldata read", []byte{0x60, 0x00, 0x60, 0x00, 0xf3}, ErrNoDispatcher, "never loads its calldata"},
		// A PUSH4 inside PUSH32's data is data, not an instruction.
		{"selector inside push data", append([]byte{0x60, 0x00, 0x35, 0x7f, 0x63, 1, 2, 3, 4, 0x14, 0x60, 0x00, 0x57}, make([]byte, 23)...), ErrNoDispatcher, "no 4-byte value"},
		{"too large", make([]byte, MaxCode+1), nil, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Selectors(tc.code)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
	// The same PUSH4 outside push data is read.
	code := []byte{0x60, 0x00, 0x35, 0x80, 0x63, 1, 2, 3, 4, 0x14, 0x61, 0x00, 0x10, 0x57, 0x00}
	got, err := Selectors(code)
	if err != nil || len(got.Selectors) != 1 || got.Selectors[0] != [4]byte{1, 2, 3, 4} {
		t.Errorf("got %v, %v", got, err)
	}
	// A selector with a leading zero byte, pushed as PUSH3 next to a PUSH4
	// one, is read zero-extended; a PUSH1 compare far from any is not.
	short := []byte{0x60, 0x00, 0x35, 0x80, 0x63, 1, 2, 3, 4, 0x14, 0x61, 0x00, 0x20, 0x57, 0x80, 0x62, 0x1f, 0x91, 0xce, 0x14, 0x61, 0x00, 0x30, 0x57, 0x00}
	if got, err := Selectors(short); err != nil || !slices.Equal(got.Selectors, [][4]byte{{1, 2, 3, 4}, {0, 0x1f, 0x91, 0xce}}) {
		t.Errorf("short selector push: %v, %v", got.Selectors, err)
	}
	far := append(slices.Clone(code[:len(code)-1]), append(make([]byte, 60), 0x80, 0x60, 0x07, 0x14, 0x61, 0x00, 0x30, 0x57, 0x00)...)
	if got, err := Selectors(far); err != nil || len(got.Selectors) != 1 {
		t.Errorf("a PUSH1 compare far from the dispatcher read as a selector: %v, %v", got.Selectors, err)
	}
	// A binary-search pivot (GT) is not a selector.
	pivot := []byte{0x60, 0x00, 0x35, 0x80, 0x63, 9, 9, 9, 9, 0x11, 0x61, 0x00, 0x10, 0x57, 0x00}
	if _, err := Selectors(pivot); !errors.Is(err, ErrNoDispatcher) {
		t.Errorf("a GT pivot read as a selector: %v", err)
	}
}

func TestParseABI(t *testing.T) {
	fns, err := ParseABI([]byte(`{"abi":[{"type":"constructor","inputs":[]},
		{"type":"function","name":"setMetadata","inputs":[{"type":"string"},{"type":"bytes32"},{"type":"bytes"}],"stateMutability":"nonpayable"},
		{"type":"function","name":"ownerOf","inputs":[{"type":"string"}],"stateMutability":"view"},
		{"type":"function","name":"batch","inputs":[{"type":"tuple[]","components":[{"type":"address"},{"type":"uint"}]}]},
		{"type":"event","name":"X","inputs":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Function{{"setMetadata(string,bytes32,bytes)", "nonpayable"}, {"ownerOf(string)", "view"}, {"batch((address,uint256)[])", "nonpayable"}}
	if !slices.Equal(fns, want) {
		t.Errorf("got %v, want %v", fns, want)
	}
	if !fns[1].ReadOnly() || fns[0].ReadOnly() {
		t.Errorf("mutability misread")
	}
	for _, bad := range []string{`{"x":1}`, `[{"type":"function","name":"f(","inputs":[]}]`, `[{"type":"function","name":"f","inputs":[{"type":"uint7"}]}]`, `not json`} {
		if _, err := ParseABI([]byte(bad)); err == nil {
			t.Errorf("ParseABI(%s) accepted", bad)
		}
	}
}

func TestSignaturesIn(t *testing.T) {
	text := "Admins call `setFee(uint fee)` and transferOwnership(address newOwner).\n" +
		"function sweep(address payable to, uint256[] calldata ids) external;\n" +
		"Not signatures: f(x, y), if (a) and require(ok). pause() is one."
	var got []string
	for _, f := range SignaturesIn(text) {
		got = append(got, f.Signature)
	}
	want := []string{"setFee(uint256)", "transferOwnership(address)", "sweep(address,uint256[])", "pause()"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCalldata(t *testing.T) {
	// register("qa"): selector, offset 0x20, length 2, "qa" padded.
	got, err := Calldata("register(string)", Fill{Text: "qa"})
	if err != nil {
		t.Fatal(err)
	}
	want := "f2c298be" + "0000000000000000000000000000000000000000000000000000000000000020" +
		"0000000000000000000000000000000000000000000000000000000000000002" +
		"7161000000000000000000000000000000000000000000000000000000000000"
	if hex.EncodeToString(got) != want {
		t.Errorf("register(\"qa\") = %x\nwant            %s", got, want)
	}
	// adminBurn(string[]) with zero values: an empty array.
	got, err = Calldata("adminBurn(string[])", Fill{Zero: true})
	if err != nil || hex.EncodeToString(got[4:]) != "0000000000000000000000000000000000000000000000000000000000000020"+strings.Repeat("0", 64) {
		t.Errorf("adminBurn zero = %x, %v", got, err)
	}
	// transferOwnership(address) with the caller.
	caller := [20]byte{0xaa, 19: 0xbb}
	got, err = Calldata("transferOwnership(address)", Fill{Caller: caller})
	if err != nil || !bytes.Equal(got[4+12:], caller[:]) || len(got) != 36 {
		t.Errorf("transferOwnership = %x, %v", got, err)
	}
	for _, bad := range []string{"f((uint256,address))", "f(uint7)", "nope", "f(uint256[1000000000])"} {
		if _, err := Calldata(bad, Fill{Word: 1}); err == nil {
			t.Errorf("Calldata(%q) accepted", bad)
		}
	}
}

func TestAddressOf(t *testing.T) {
	for _, tc := range []struct{ key, addr string }{
		{"0000000000000000000000000000000000000000000000000000000000000001", "7e5f4552091a69125d5dfcb7b8c2659029395bdf"},
		{"ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80", "f39fd6e51aad88f6f4ce6ab8827279cfffb92266"},
	} {
		k, err := HexKey("0x" + tc.key)
		if err != nil {
			t.Fatal(err)
		}
		a, err := AddressOf(k)
		if err != nil || hex.EncodeToString(a[:]) != tc.addr {
			t.Errorf("AddressOf(%s) = %x, %v; want %s", tc.key[:6], a, err, tc.addr)
		}
	}
	if _, err := AddressOf([32]byte{}); !errors.Is(err, ErrNotAKey) {
		t.Errorf("zero key: %v", err)
	}
	n := [32]byte(hexBytes(t, []byte("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")))
	if _, err := AddressOf(n); !errors.Is(err, ErrNotAKey) {
		t.Errorf("the curve order as a key: %v", err)
	}
}

func TestPEMKey(t *testing.T) {
	// A SEC 1 "EC PRIVATE KEY" on secp256k1 whose private key is 1.
	der, err := asn1.Marshal(sec1Key{Version: 1, PrivateKey: append(make([]byte, 31), 1), Curve: oidSecp256k1})
	if err != nil {
		t.Fatal(err)
	}
	sec1 := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	k, err := PEMKey(sec1)
	if err != nil {
		t.Fatal(err)
	}
	if k != [32]byte{31: 1} {
		t.Errorf("key %x", k)
	}
	rsa := "-----BEGIN RSA PRIVATE KEY-----\nMAA=\n-----END RSA PRIVATE KEY-----\n"
	if _, err := PEMKey(rsa); !errors.Is(err, ErrNotSecp256k1) {
		t.Errorf("RSA block: %v", err)
	}
	if _, err := PEMKey("-----BEGIN EC PRIVATE KEY-----\nnot base64\n"); err == nil {
		t.Errorf("a broken block accepted")
	}
}

func TestEncodeArgs(t *testing.T) {
	// The same bytes as Calldata for the same values.
	caller := [20]byte{0xaa, 19: 0xbb}
	got, err := EncodeArgs("setMetadata(string,bytes32,bytes)", []string{"qa", "title", "qa"})
	if err != nil {
		t.Fatal(err)
	}
	key := Keccak256([]byte("title"))
	if !bytes.Equal(got[4+32:4+64], key[:]) || len(got) != 4+3*32+2*64 {
		t.Errorf("setMetadata = %x", got)
	}
	want, _ := Calldata("f(address,uint256,bool)", Fill{Caller: caller, Word: 1})
	got, err = EncodeArgs("f(address,uint256,bool)", []string{"0x" + hex.EncodeToString(caller[:]), "1", "true"})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("EncodeArgs = %x, %v; want %x", got, err, want)
	}
	for _, bad := range [][]string{{"0x12", "1", "true"}, {"0x" + hex.EncodeToString(caller[:]), "-1", "true"}, {"0x" + hex.EncodeToString(caller[:]), "1", "yes"}, {"1"}} {
		if _, err := EncodeArgs("f(address,uint256,bool)", bad); err == nil {
			t.Errorf("EncodeArgs(%q) accepted", bad)
		}
	}
	b, err := ReturnedBytes(got[4+32+32:]) // not bytes: an error or garbage, never a panic
	_ = b
	ret, _ := EncodeArgs("r(bytes)", []string{"hello"})
	if b, err := ReturnedBytes(ret[4:]); err != nil || string(b) != "hello" {
		t.Errorf("ReturnedBytes = %q, %v", b, err)
	}
	if _, err := ReturnedBytes(nil); err == nil {
		t.Errorf("empty return data decoded")
	}
}
