package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
)

var ether = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// Carol is a name the tests register with a fresh key, the way a probe at
// the exercise rung mints its own names.
const Carol = "carol"

// env is a running testbed on a dev chain, with a third name (Carol) and
// clients to poke at both.
type env struct {
	tb      *Testbed
	chain   *chain.Client
	eth     *ethclient.Client
	sponsor *chain.Key
	carol   *chain.Key
	http    *http.Client
}

// mustTestbed starts a dev chain and a testbed on it, registers Carol, and
// closes everything when the test ends.
func mustTestbed(tb testing.TB) *env {
	tb.Helper()
	ctx := context.Background()
	sponsor, err := chain.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	ch, err := devchain.Start(ctx, devchain.Config{
		Funded: []devchain.Account{{Address: sponsor.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(1000))}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ch.Close() })
	keyFile := filepath.Join(tb.TempDir(), "sponsor.key")
	if err := chain.WriteKeyFile(keyFile, sponsor); err != nil {
		tb.Fatal(err)
	}
	t, err := Serve(ctx, Config{
		RPC:            ch.URL(),
		ChainID:        ch.ChainID(),
		SponsorKeyFile: keyFile,
		Compiler:       []string{"/usr/local/bin/fleetd", "testbed", "compile", "{src}"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := t.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	c, err := chain.Dial(ctx, ch.URL(), chain.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	ec, err := ethclient.DialContext(ctx, ch.URL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(ec.Close)
	e := &env{tb: t, chain: c, eth: ec, sponsor: sponsor, http: &http.Client{Timeout: 10 * time.Second}}
	e.carol = e.fundedKey(tb)
	e.send(tb, e.carol, "register", Carol)
	return e
}

// fundedKey returns a fresh key holding one ether.
func (e *env) fundedKey(tb testing.TB) *chain.Key {
	tb.Helper()
	k, err := chain.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.chain.Transfer(context.Background(), e.sponsor, k.Address(), ether); err != nil {
		tb.Fatal(err)
	}
	return k
}

func (e *env) registry() common.Address { return common.HexToAddress(e.tb.Registry()) }

// send sends a registry transaction through fleetd's chain client (and so
// through its write guard).
func (e *env) send(tb testing.TB, key *chain.Key, method string, args ...any) {
	tb.Helper()
	a, err := registryABI()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := a.Pack(method, args...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sendRaw(context.Background(), e.chain, key, fleet.Address(e.registry()), data); err != nil {
		tb.Fatalf("%s: %v", method, err)
	}
}

// sendUnguarded signs and sends a registry transaction with go-ethereum
// directly, as an attacker would: no write guard.
func (e *env) sendUnguarded(tb testing.TB, key *chain.Key, method string, args ...any) *types.Receipt {
	tb.Helper()
	ctx := context.Background()
	a, _ := registryABI()
	data, err := a.Pack(method, args...)
	if err != nil {
		tb.Fatal(err)
	}
	from := common.Address(key.Address())
	to := e.registry()
	nonce, err := e.eth.PendingNonceAt(ctx, from)
	if err != nil {
		tb.Fatal(err)
	}
	gas, err := e.eth.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &to, Data: data})
	if err != nil {
		tb.Fatalf("estimate %s: %v", method, err)
	}
	tip, err := e.eth.SuggestGasTipCap(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	head, err := e.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	id, err := e.eth.ChainID(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tx, err := types.SignNewTx(key.PrivateKey(), types.LatestSignerForChainID(id), &types.DynamicFeeTx{
		ChainID: id, Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas: gas * 2, To: &to, Data: data,
	})
	if err != nil {
		tb.Fatal(err)
	}
	for attempt := 0; ; attempt++ { // see sendRaw: the pool may lag the funding block
		err := e.eth.SendTransaction(ctx, tx)
		if err == nil {
			break
		}
		if attempt == 40 || !strings.Contains(err.Error(), "insufficient funds") {
			tb.Fatalf("send %s: %v", method, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := e.eth.TransactionReceipt(ctx, tx.Hash())
		if err == nil {
			// A receipt can show up before "latest" reaches its block; wait
			// for the head so the test reads the transaction's effects.
			for time.Now().Before(deadline) {
				if n, err := e.eth.BlockNumber(ctx); err == nil && n >= r.BlockNumber.Uint64() {
					return r
				}
				time.Sleep(5 * time.Millisecond)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("no receipt for %s", method)
	return nil
}

// ethCall runs a registry call from an address and returns its error (a
// revert) or nil.
func (e *env) ethCall(tb testing.TB, from common.Address, method string, args ...any) ([]byte, error) {
	tb.Helper()
	a, _ := registryABI()
	data, err := a.Pack(method, args...)
	if err != nil {
		tb.Fatal(err)
	}
	to := e.registry()
	return e.eth.CallContract(context.Background(), ethereum.CallMsg{From: from, To: &to, Data: data}, nil)
}

type response struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

func (e *env) do(tb testing.TB, method, url string, header map[string]string, body string) response {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := e.http.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b), elapsed: time.Since(start)}
}

func (e *env) get(tb testing.TB, path string) response {
	tb.Helper()
	return e.do(tb, http.MethodGet, e.tb.URL()+path, nil, "")
}

// callJSON posts a well-formed call and decodes the reply.
func (e *env) callJSON(tb testing.TB, header map[string]string, req map[string]string) (response, string) {
	tb.Helper()
	b, _ := json.Marshal(req)
	r := e.do(tb, http.MethodPost, e.tb.Target().Call, header, string(b))
	var out struct {
		Reply *string `json:"reply"`
	}
	if r.status == http.StatusOK {
		if err := json.Unmarshal([]byte(r.body), &out); err != nil || out.Reply == nil {
			tb.Fatalf("call %v: body %q is not {\"reply\": ...}: %v", req, r.body, err)
		}
		return r, *out.Reply
	}
	return r, ""
}

func wantStatus(tb testing.TB, r response, status int) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status %d, want %d; body:\n%s", r.status, status, r.body)
	}
}

var (
	privateKeyRE = regexp.MustCompile(`0x[0-9a-fA-F]{64}\b`)
	linkRE       = regexp.MustCompile(`\]\((http[^)\s]+)\)`)
)

// flaws are the planted flaws of README.md, each checked through plain HTTP
// and RPC the way a generic probe could. The compiler's flaws are checked by
// testbed/compiler's TestPlantedFlaws (a parent package may not import its
// subpackage, even in tests).
var flaws = []struct {
	id    string
	check func(t *testing.T, e *env)
}{
	{"S1", func(t *testing.T, e *env) {
		// Observe: Bob's face carries a user's script, unescaped.
		r := e.get(t, "/"+Bob+"/")
		wantStatus(t, r, http.StatusOK)
		if !strings.Contains(r.body, `<script>alert("xss:" + document.domain)</script>`) {
			t.Errorf("bob's face does not carry the raw script:\n%s", r.body)
		}
		// Exercise: a canary published under any key comes back unescaped.
		canary := `<script>canary_7f3a()</script>`
		e.send(t, e.carol, "setMetadata", Carol, [32]byte(crypto.Keccak256Hash([]byte("artifact"))), []byte(canary))
		r = e.get(t, "/"+Carol+"/")
		wantStatus(t, r, http.StatusOK)
		if !strings.Contains(r.body, canary) {
			t.Errorf("canary not reflected raw:\n%s", r.body)
		}
	}},
	{"S2", func(t *testing.T, e *env) {
		llms := e.get(t, "/llms.txt")
		if !strings.Contains(llms.body, e.tb.URL()+"/.env") {
			t.Errorf("llms.txt does not link /.env:\n%s", llms.body)
		}
		r := e.get(t, "/.env")
		wantStatus(t, r, http.StatusOK)
		m := privateKeyRE.FindString(r.body)
		if m == "" {
			t.Fatalf("/.env holds no private key:\n%s", r.body)
		}
		priv, err := crypto.HexToECDSA(m[2:])
		if err != nil {
			t.Fatalf("leaked %q is not a private key: %v", m, err)
		}
		addr := crypto.PubkeyToAddress(priv.PublicKey)
		if addr == common.Address(e.sponsor.Address()) {
			t.Fatal("the leaked key is the sponsor's")
		}
		bal, err := e.eth.BalanceAt(context.Background(), addr, nil)
		if err != nil || bal.Sign() != 0 {
			t.Errorf("leaked key's balance %v (%v), want 0", bal, err)
		}
	}},
	{"S3", func(t *testing.T, e *env) {
		stranger := common.Address(mustKey(t).Address())
		if _, err := e.ethCall(t, stranger, "adminBurn", []string{Alice}); err != nil {
			t.Errorf("adminBurn from a stranger reverted: %v", err)
		}
		if _, err := e.ethCall(t, stranger, "adminResetAll"); err == nil {
			t.Error("adminResetAll from a stranger did not revert")
		}
		if _, err := e.ethCall(t, common.Address(e.sponsor.Address()), "adminResetAll"); err != nil {
			t.Errorf("adminResetAll from the owner reverted: %v", err)
		}
		// And for real: a stranger's transaction burns someone else's name.
		victim := e.fundedKey(t)
		e.send(t, victim, "register", "erin")
		rc := e.sendUnguarded(t, e.fundedKey(t), "adminBurn", []string{"erin"})
		if rc.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("adminBurn transaction failed: status %d", rc.Status)
		}
		owner, err := e.tb.reg.ownerOf(context.Background(), "erin")
		if err != nil || owner != (common.Address{}) {
			t.Errorf("after a stranger's adminBurn, erin is owned by %v (%v)", owner, err)
		}
	}},
	{"S4", func(t *testing.T, e *env) {
		req := map[string]string{"target": Carol, "message": "whoami"}
		_, plain := e.callJSON(t, nil, req)
		if strings.Contains(plain, "tbk_") {
			t.Fatalf("anonymous caller got the token: %q", plain)
		}
		spoofs := []struct {
			header map[string]string
			from   string
		}{
			{nil, "admin"},
			{map[string]string{"X-Caller": "admin"}, ""},
			{map[string]string{"X-Caller": e.sponsor.Address().String()}, ""},
			{nil, common.Address(e.sponsor.Address()).Hex()},
		}
		for _, s := range spoofs {
			req := map[string]string{"target": Carol, "message": "whoami", "from": s.from}
			r, reply := e.callJSON(t, s.header, req)
			wantStatus(t, r, http.StatusOK)
			if !strings.Contains(reply, "Internal token: tbk_") {
				t.Errorf("spoof header %v from %q: reply %q has no token", s.header, s.from, reply)
			}
		}
	}},
	{"S5", func(t *testing.T, e *env) {
		r := e.do(t, http.MethodGet, e.tb.URL()+"/"+Alice+"/", map[string]string{"Origin": "https://evil.example"}, "")
		if got := r.header.Get("Access-Control-Allow-Origin"); got != "https://evil.example" {
			t.Errorf("Access-Control-Allow-Origin %q, want the reflected origin", got)
		}
		if got := r.header.Get("Access-Control-Allow-Credentials"); got != "true" {
			t.Errorf("Access-Control-Allow-Credentials %q, want true", got)
		}
		for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"} {
			if v := r.header.Get(h); v != "" {
				t.Errorf("%s is set (%q); the flaw is that it is missing", h, v)
			}
		}
		pre := e.do(t, http.MethodOptions, e.tb.Target().Call, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, "")
		if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != "https://evil.example" {
			t.Errorf("preflight: status %d, allow-origin %q", pre.status, pre.header.Get("Access-Control-Allow-Origin"))
		}
	}},
	{"F1", nil}, // testbed/compiler TestPlantedFlaws
	{"F2", nil}, // testbed/compiler TestPlantedFlaws
	{"F3", func(t *testing.T, e *env) {
		for _, body := range []string{`{"target": "alice", "message": `, `["alice"]`, `{"target": 7}`, ``} {
			r := e.do(t, http.MethodPost, e.tb.Target().Call, nil, body)
			wantStatus(t, r, http.StatusInternalServerError)
			for _, want := range []string{"panic: decode call request", "goroutine ", "server.go:"} {
				if !strings.Contains(r.body, want) {
					t.Errorf("body %q: 500 lacks %q:\n%s", body, want, r.body)
				}
			}
		}
		// Reachable through a well-formed call too: a message that looks like JSON.
		b, _ := json.Marshal(map[string]string{"target": Carol, "message": `{"tool": `})
		r := e.do(t, http.MethodPost, e.tb.Target().Call, nil, string(b))
		wantStatus(t, r, http.StatusInternalServerError)
		if !strings.Contains(r.body, "goroutine ") {
			t.Errorf("structured message: 500 without a stack trace:\n%s", r.body)
		}
	}},
	{"U1", func(t *testing.T, e *env) {
		r := e.get(t, "/zzz/")
		wantStatus(t, r, http.StatusNotFound)
		if want := "open /srv/testbed/faces/zzz.html: no such file or directory"; !strings.Contains(r.body, want) {
			t.Errorf("404 page lacks %q:\n%s", want, r.body)
		}
	}},
	{"U2", func(t *testing.T, e *env) {
		llms := e.get(t, "/llms.txt")
		var dead []string
		for _, m := range linkRE.FindAllStringSubmatch(llms.body, -1) {
			if r := e.do(t, http.MethodGet, m[1], nil, ""); r.status == http.StatusNotFound {
				dead = append(dead, m[1])
			}
		}
		if want := []string{e.tb.URL() + "/docs/getting-started"}; !slices.Equal(dead, want) {
			t.Errorf("dead links %v, want %v", dead, want)
		}
	}},
	{"U3", func(t *testing.T, e *env) {
		skill := e.get(t, "/skill.md")
		documented := e.tb.URL() + "/call?target=" + Alice + "&message=hello"
		if !strings.Contains(skill.body, "GET "+documented) {
			t.Fatalf("skill.md does not document GET /call:\n%s", skill.body)
		}
		r := e.do(t, http.MethodGet, documented, nil, "")
		wantStatus(t, r, http.StatusMethodNotAllowed)
		if allow := r.header.Get("Allow"); allow != http.MethodPost {
			t.Errorf("Allow %q, want POST", allow)
		}
	}},
	{"U4", func(t *testing.T, e *env) {
		r, reply := e.callJSON(t, nil, map[string]string{"target": Bob, "message": "hello"})
		wantStatus(t, r, http.StatusOK)
		if reply != "" || !strings.Contains(r.body, `"reply":""`) {
			t.Errorf("bob replied %q (body %q), want an empty reply", reply, r.body)
		}
	}},
	{"P1", nil}, // testbed/compiler TestPlantedFlaws
	{"P2", func(t *testing.T, e *env) {
		r, reply := e.callJSON(t, nil, map[string]string{"target": Alice, "message": "ping"})
		wantStatus(t, r, http.StatusOK)
		if reply != "pong" || r.elapsed < SLO {
			t.Errorf("alice: reply %q after %v, want pong after more than %v", reply, r.elapsed, SLO)
		}
	}},
	{"P3", func(t *testing.T, e *env) {
		r := e.get(t, "/"+Bob+"/")
		wantStatus(t, r, http.StatusOK)
		if r.elapsed < SLO {
			t.Errorf("bob's face took %v, want more than %v", r.elapsed, SLO)
		}
	}},
}

func mustKey(tb testing.TB) *chain.Key {
	tb.Helper()
	k, err := chain.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// TestPlantedFlaws checks every flaw in README.md manifests. A row fails when
// its flaw is fixed: the testbed is supposed to stay broken.
func TestPlantedFlaws(t *testing.T) {
	e := mustTestbed(t)
	for _, f := range flaws {
		t.Run(f.id, func(t *testing.T) {
			if f.check == nil {
				t.Skip("checked by testbed/compiler's TestPlantedFlaws")
			}
			f.check(t, e)
		})
	}
}

// TestReadmeListsEveryFlaw keeps README.md's flaw table and the flaws table
// above in step.
func TestReadmeListsEveryFlaw(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| ([SFUP][0-9]+) \| (security|fuzz|ux|perf) \|`)
	var documented []string
	perClass := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
		perClass[m[2]]++
	}
	var tested []string
	for _, f := range flaws {
		tested = append(tested, f.id)
	}
	if !slices.Equal(documented, tested) {
		t.Errorf("README.md lists %v, the tests check %v", documented, tested)
	}
	for _, class := range []string{"security", "fuzz", "ux", "perf"} {
		if perClass[class] < 2 {
			t.Errorf("%d %s flaws, want at least 2", perClass[class], class)
		}
	}
}

// TestBehaviour checks what is not flawed works: the seeded names, faces,
// calls, docs and the target section.
func TestBehaviour(t *testing.T) {
	e := mustTestbed(t)
	ctx := context.Background()

	t.Run("owners", func(t *testing.T) {
		a, err := e.tb.reg.ownerOf(ctx, Alice)
		if err != nil || a != common.Address(e.sponsor.Address()) {
			t.Errorf("alice owned by %v (%v), want the sponsor", a, err)
		}
		b, err := e.tb.reg.ownerOf(ctx, Bob)
		if err != nil || b == (common.Address{}) || b == a {
			t.Errorf("bob owned by %v (%v), want a user key", b, err)
		}
		out, err := e.ethCall(t, common.Address{}, "owner")
		if err != nil || common.BytesToAddress(out) != a {
			t.Errorf("registry owner %x (%v), want the sponsor", out, err)
		}
	})
	t.Run("alice's face", func(t *testing.T) {
		r := e.get(t, "/"+Alice+"/")
		wantStatus(t, r, http.StatusOK)
		for _, want := range []string{"<title>Alice's Tea Room</title>", "<h1>Alice's Tea Room</h1>", "owner " + common.Address(e.sponsor.Address()).Hex()} {
			if !strings.Contains(r.body, want) {
				t.Errorf("face lacks %q:\n%s", want, r.body)
			}
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("Content-Type %q", ct)
		}
	})
	t.Run("a face without metadata", func(t *testing.T) {
		r := e.get(t, "/"+Carol+"/")
		wantStatus(t, r, http.StatusOK)
		if !strings.Contains(r.body, "carol has not published a face yet") {
			t.Errorf("body:\n%s", r.body)
		}
	})
	t.Run("binary metadata is shown as hex", func(t *testing.T) {
		k := e.fundedKey(t)
		e.send(t, k, "register", "dave")
		e.send(t, k, "setMetadata", "dave", [32]byte(crypto.Keccak256Hash([]byte("app"))), []byte{0x00, 0x74, 0x6c, 0x62, 0xff})
		r := e.get(t, "/dave/")
		if !strings.Contains(r.body, "5 bytes: 00746c62ff") {
			t.Errorf("body:\n%s", r.body)
		}
	})
	t.Run("a face name that is not a file name", func(t *testing.T) {
		r := e.get(t, "/..%2F..%2Fetc%2Fpasswd/")
		wantStatus(t, r, http.StatusNotFound)
		if strings.Contains(r.body, "open ") {
			t.Errorf("traversal name reached the file system:\n%s", r.body)
		}
	})
	t.Run("calls", func(t *testing.T) {
		tests := []struct {
			message, want string
		}{
			{"ping", "pong"},
			{"echo hi there", "hi there"},
			{"whoami", "You are anonymous."},
			{"", "Say something: try help."},
			{"what's on the menu?", "carol here. I got your message (19 bytes)."},
			{`{"tool": "menu"}`, `carol has no tool "menu".`},
		}
		for _, tt := range tests {
			r, reply := e.callJSON(t, nil, map[string]string{"target": Carol, "message": tt.message})
			wantStatus(t, r, http.StatusOK)
			if reply != tt.want {
				t.Errorf("%q: reply %q, want %q", tt.message, reply, tt.want)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		}
		r, _ := e.callJSON(t, nil, map[string]string{"target": "nobody", "message": "hi"})
		wantStatus(t, r, http.StatusNotFound)
		r, _ = e.callJSON(t, nil, map[string]string{"message": "hi"})
		wantStatus(t, r, http.StatusBadRequest)
	})
	t.Run("docs and index", func(t *testing.T) {
		for _, u := range e.tb.Target().Docs {
			if r := e.do(t, http.MethodGet, u, nil, ""); r.status != http.StatusOK {
				t.Errorf("GET %s: %d", u, r.status)
			}
		}
		r := e.get(t, "/")
		wantStatus(t, r, http.StatusOK)
		for _, want := range []string{`href="/alice/"`, `href="/bob/"`, `href="/llms.txt"`, e.tb.Registry()} {
			if !strings.Contains(r.body, want) {
				t.Errorf("index lacks %q", want)
			}
		}
	})
	t.Run("target", func(t *testing.T) {
		tg := e.tb.Target()
		host := strings.TrimPrefix(e.tb.URL(), "http://")
		want := TargetConfig{
			Registry:       e.tb.Registry(),
			Faces:          e.tb.URL() + "/{name}/",
			Call:           e.tb.URL() + "/call",
			Docs:           []string{e.tb.URL() + "/llms.txt", e.tb.URL() + "/skill.md"},
			Compiler:       []string{"/usr/local/bin/fleetd", "testbed", "compile", "{src}"},
			FetchAllow:     []string{host},
			AdminFunctions: []string{"adminBurn(string[])", "adminResetAll()"},
			Names:          []string{"alice", "bob"},
			Corpus:         tg.Corpus,
			SLO:            TargetSLO{P95MS: 500},
		}
		if !equalJSON(t, tg, want) {
			t.Errorf("Target() = %+v, want %+v", tg, want)
		}
		if !regexp.MustCompile(`^0x[0-9a-f]{40}$`).MatchString(tg.Registry) || !strings.HasPrefix(host, "127.0.0.1:") {
			t.Errorf("registry %q, host %q", tg.Registry, host)
		}
		files, _ := filepath.Glob(filepath.Join(tg.Corpus, "*.tl"))
		if len(files) < 3 {
			t.Errorf("corpus %s holds %v", tg.Corpus, files)
		}
		line, err := e.tb.TargetJSON()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(line, []byte("\n")) {
			t.Errorf("TargetJSON is not one line: %s", line)
		}
		var decoded map[string]map[string]any
		if err := json.Unmarshal(line, &decoded); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range decoded["target"] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		wantKeys := []string{"admin_functions", "call", "compiler", "corpus", "docs", "faces", "fetch_allow", "names", "registry", "slo"}
		if !slices.Equal(keys, wantKeys) {
			t.Errorf("target keys %v, want %v", keys, wantKeys)
		}
	})
}

func equalJSON(tb testing.TB, a, b any) bool {
	tb.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		tb.Fatal(err1, err2)
	}
	return bytes.Equal(x, y)
}

func TestServeRefuses(t *testing.T) {
	ctx := context.Background()
	k := mustKey(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no rpc", Config{Sponsor: k}, "no RPC URL"},
		{"no sponsor", Config{RPC: "http://127.0.0.1:1"}, "no sponsor key"},
		{"public address", Config{RPC: "http://127.0.0.1:1", Sponsor: k, Addr: "0.0.0.0:8080"}, "not a loopback address"},
		{"bad address", Config{RPC: "http://127.0.0.1:1", Sponsor: k, Addr: "8080"}, "listen address"},
		{"missing key file", Config{RPC: "http://127.0.0.1:1", SponsorKeyFile: filepath.Join(t.TempDir(), "nope")}, "sponsor key"},
		{"no node", Config{RPC: "http://127.0.0.1:1", Sponsor: k}, "node unreachable"},
		{"port in use", Config{RPC: "http://127.0.0.1:1", Sponsor: k, Addr: busy}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, err := Serve(ctx, tt.cfg)
			if err == nil {
				tb.Close()
				t.Fatal("Serve succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestCloseStopsEverything(t *testing.T) {
	e := mustTestbed(t)
	corpus := e.tb.Target().Corpus
	// A planted sleep in flight must not hold Close up.
	done := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(map[string]string{"target": Alice, "message": "ping"})
		resp, err := e.http.Post(e.tb.Target().Call, "application/json", bytes.NewReader(b))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := e.tb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > closeTimeout {
		t.Errorf("Close took %v", d)
	}
	<-done
	if err := e.tb.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(corpus); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary corpus %s survives Close: %v", corpus, err)
	}
	if _, err := e.http.Get(e.tb.URL() + "/"); err == nil {
		t.Error("server still answers after Close")
	}
}
