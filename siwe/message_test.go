package siwe

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// specExample is the example message of EIP-4361 itself.
const specExample = `service.invalid wants you to sign in with your Ethereum account:
0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2

I accept the ServiceOrg Terms of Service: https://service.invalid/tos

URI: https://service.invalid/login
Version: 1
Chain ID: 1
Nonce: 32891756
Issued At: 2021-09-30T16:25:24Z
Resources:
- ipfs://bafybeiemxf5abjwjbikoz4mc3a3dla6ual3jsgpdr4cjr3oz3evfyavhwq/
- https://example.com/my-web2-claim.json`

func TestParseSpecExample(t *testing.T) {
	m, err := Parse(specExample)
	if err != nil {
		t.Fatal(err)
	}
	if m.Domain != "service.invalid" || m.Address != "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2" ||
		m.Statement != "I accept the ServiceOrg Terms of Service: https://service.invalid/tos" ||
		m.URI != "https://service.invalid/login" || m.ChainID != 1 || m.Nonce != "32891756" ||
		!m.IssuedAt.Equal(time.Date(2021, 9, 30, 16, 25, 24, 0, time.UTC)) || len(m.Resources) != 2 {
		t.Fatalf("parsed %+v", m)
	}
	out, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	if out != specExample {
		t.Fatalf("rebuilt:\n%s\nwant:\n%s", out, specExample)
	}
}

func TestBuildOptionalFields(t *testing.T) {
	at := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	m := Message{Scheme: "https", Domain: "127.0.0.1:8080", Address: "0x" + strings.Repeat("ab", 20), URI: "http://127.0.0.1:8080",
		Version: "1", ChainID: 1337, Nonce: "abcdefgh12", IssuedAt: at, ExpirationTime: at.Add(10 * time.Minute), NotBefore: at, RequestID: "r1"}
	out, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := "https://127.0.0.1:8080 wants you to sign in with your Ethereum account:\n0x" + strings.Repeat("ab", 20) +
		"\n\n\nURI: http://127.0.0.1:8080\nVersion: 1\nChain ID: 1337\nNonce: abcdefgh12\nIssued At: 2026-12-06T02:00:00Z\n" +
		"Expiration Time: 2026-12-06T02:10:00Z\nNot Before: 2026-12-06T02:00:00Z\nRequest ID: r1"
	if out != want {
		t.Fatalf("built:\n%q\nwant:\n%q", out, want)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Scheme != "https" || back.Statement != "" || !back.ExpirationTime.Equal(m.ExpirationTime) || back.RequestID != "r1" {
		t.Fatalf("parsed back %+v", back)
	}
	if !back.Expired(at.Add(10*time.Minute)) || back.Expired(at.Add(time.Minute)) || !back.Expired(at.Add(-time.Second)) {
		t.Fatal("Expired disagrees with the expiration and not-before times")
	}
}

func TestParseRefusesNamingTheProblem(t *testing.T) {
	good := strings.ReplaceAll(specExample, "\nResources:\n- ipfs://bafybeiemxf5abjwjbikoz4mc3a3dla6ual3jsgpdr4cjr3oz3evfyavhwq/\n- https://example.com/my-web2-claim.json", "")
	for _, tc := range []struct{ name, text, want string }{
		{"no preamble", "hello", "wants you to sign in"},
		{"bad address", strings.Replace(good, "0xC02a", "0xZ02a", 1), "address"},
		{"short nonce", strings.Replace(good, "Nonce: 32891756", "Nonce: 123", 1), "nonce"},
		{"bad chain id", strings.Replace(good, "Chain ID: 1", "Chain ID: 01", 1), "Chain ID"},
		{"bad time", strings.Replace(good, "2021-09-30T16:25:24Z", "yesterday", 1), "Issued At"},
		{"version 2", strings.Replace(good, "Version: 1", "Version: 2", 1), "version"},
		{"missing uri", strings.Replace(good, "URI: https://service.invalid/login\n", "", 1), "URI"},
		{"trailing junk", good + "\nX: y", "unexpected"},
		{"relative uri", strings.Replace(good, "URI: https://service.invalid/login", "URI: /login", 1), "uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v wraps neither sentinel", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

// FuzzParse: Parse never panics, and whatever it accepts builds again and
// parses back to the same message.
func FuzzParse(f *testing.F) {
	f.Add(specExample)
	f.Add("a wants you to sign in with your Ethereum account:\n0x0000000000000000000000000000000000000000\n\n\nURI: x:y\nVersion: 1\nChain ID: 5\nNonce: aaaaaaaa\nIssued At: 2020-01-01T00:00:00.5+02:00\nExpiration Time: 2020-01-01T00:00:00Z")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := Parse(text)
		if err != nil {
			return
		}
		out, err := m.Build()
		if err != nil {
			t.Fatalf("parsed message does not build: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("built message does not parse: %v\n%q", err, out)
		}
		if back.Domain != m.Domain || back.Address != m.Address || back.Statement != m.Statement || back.Nonce != m.Nonce ||
			back.ChainID != m.ChainID || back.URI != m.URI || !back.IssuedAt.Equal(m.IssuedAt.Truncate(time.Second)) || len(back.Resources) != len(m.Resources) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, back)
		}
	})
}
