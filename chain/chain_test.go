package chain

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
)

// backend is a running node and a funded key on it.
type backend struct {
	url     string
	sponsor *Key
}

var ether = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// mustDevchain starts the embedded dev chain with a funded sponsor.
func mustDevchain(tb testing.TB) backend {
	tb.Helper()
	sponsor, err := GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	ch, err := devchain.Start(context.Background(), devchain.Config{
		Funded: []devchain.Account{{Address: sponsor.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(1_000_000))}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ch.Close() })
	return backend{url: ch.URL(), sponsor: sponsor}
}

// gethBinary finds a geth for the external-node tests: $FLEETD_GETH, then PATH,
// then the cache directory .ci/run installs into.
func gethBinary() string {
	if p := os.Getenv("FLEETD_GETH"); p != "" {
		return p
	}
	if p, err := exec.LookPath("geth"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "fleetd", "bin", "geth")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// mustGethDev starts `geth --dev` on a free loopback port and funds a fresh
// sponsor from the node's unlocked dev account. It skips without a geth
// binary, and fails without one when CI is set.
func mustGethDev(tb testing.TB) backend {
	tb.Helper()
	bin := gethBinary()
	if bin == "" {
		const why = "no geth binary (set FLEETD_GETH, or put geth on PATH; .ci/run installs go-ethereum v1.17.8's geth)"
		if os.Getenv("CI") != "" {
			tb.Fatal(why) // .ci/run installs it: missing there is a broken setup
		}
		tb.Skip(why)
	}
	// geth binds HTTP on port 0 and logs the port it got (at info level):
	// a port picked here and released for geth to bind could be taken in
	// between by another test's listener or connection.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--dev", "--dev.gaslimit", "60000000",
		"--http", "--http.addr", "127.0.0.1", "--http.port", "0", "--http.api", "eth,net,web3",
		"--nodiscover", "--maxpeers", "0", "--port", "0", "--authrpc.port", "0", "--ipcdisable", "--verbosity", "3")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	endpoint := make(chan string, 1)
	scanned := make(chan struct{})
	go func() { // keep the pipe drained; show geth's complaints if a test fails
		defer close(scanned)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			line := s.Text()
			if _, rest, ok := strings.Cut(line, "HTTP server started"); ok {
				for _, f := range strings.Fields(rest) {
					if ep, ok := strings.CutPrefix(f, "endpoint="); ok {
						select {
						case endpoint <- ep:
						default:
						}
					}
				}
			}
			if !strings.HasPrefix(line, "INFO ") && !strings.HasPrefix(line, "WARN ") { // what --verbosity 1 showed
				tb.Log("geth: " + line)
			}
		}
		close(endpoint)
	}()
	// Wait closes the pipe once geth exits; the scanner then ends, and no
	// line is logged after the test.
	tb.Cleanup(func() { cancel(); cmd.Wait(); <-scanned })

	var url string
	select {
	case ep, ok := <-endpoint:
		if !ok {
			tb.Fatal("geth --dev exited without starting its HTTP server")
		}
		url = "http://" + ep
	case <-time.After(30 * time.Second):
		tb.Fatal("geth --dev did not start its HTTP server within 30s")
	}
	var rc *rpc.Client
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		rc, err = rpc.Dial(url)
		if err == nil {
			var id string
			if err = rc.Call(&id, "eth_chainId"); err == nil {
				break
			}
			rc.Close()
		}
		if time.Now().After(deadline) {
			tb.Fatalf("geth --dev did not answer on %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer rc.Close()
	var accounts []common.Address
	if err := rc.Call(&accounts, "eth_accounts"); err != nil || len(accounts) == 0 {
		tb.Fatalf("geth dev account: %v %v", accounts, err)
	}
	sponsor, _ := GenerateKey()
	var h common.Hash
	tx := map[string]any{"from": accounts[0], "to": common.Address(sponsor.Address()), "value": "0x" + new(big.Int).Mul(ether, big.NewInt(1000)).Text(16)}
	if err := rc.Call(&h, "eth_sendTransaction", tx); err != nil {
		tb.Fatalf("fund sponsor: %v", err)
	}
	c := mustDial(tb, url)
	// geth serves RPC before its on-demand miner listens for transactions
	// (it starts its endpoints before its lifecycles): a transaction sent
	// in between waits in the pool until the next one comes (ci35: "fund
	// sponsor: timed out waiting for receipt after 20s"). A 0-wei
	// transfer from the dev account to itself comes next, until the
	// funding is mined.
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.waitReceipt(ctx, h)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("fund sponsor: %v", err)
		}
		var nudge common.Hash
		if err := rc.Call(&nudge, "eth_sendTransaction", map[string]any{"from": accounts[0], "to": accounts[0], "value": "0x0"}); err != nil {
			tb.Logf("nudge the dev miner: %v", err)
		}
	}
	return backend{url: url, sponsor: sponsor}
}

func mustDial(tb testing.TB, url string) *Client {
	tb.Helper()
	c, err := Dial(context.Background(), url, Options{ReceiptTimeout: 20 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func TestEmbeddedDevChain(t *testing.T) { runSuite(t, mustDevchain(t)) }

func TestExternalGethDev(t *testing.T) {
	if testing.Short() {
		t.Skip("external geth in -short mode")
	}
	runSuite(t, mustGethDev(t))
}

// runSuite is the chain layer's contract, run against every kind of node
// and both log versions.
func runSuite(t *testing.T, b backend) {
	for _, ver := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", ver), func(t *testing.T) { runSuiteVersion(t, b, ver) })
	}
}

// deployVersion deploys an empty log of version ver.
func deployVersion(ctx context.Context, c *Client, key *Key, ver int) (*FeedbackLog, *Receipt, error) {
	if ver == 2 {
		return c.DeployFeedbackLogV2(ctx, key)
	}
	return c.DeployFeedbackLog(ctx, key)
}

func runSuiteVersion(t *testing.T, b backend, ver int) {
	ctx := context.Background()
	c := mustDial(t, b.url)
	log, rcpt, err := deployVersion(ctx, c, b.sponsor, ver)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FeedbackLog v%d deployed at %s, gas %d", ver, log.Address(), rcpt.GasUsed)
	// A fresh handle finds the version out by asking the contract.
	if v, err := c.FeedbackLog(log.Address()).Version(ctx); err != nil || v != ver {
		t.Fatalf("Version() = %d, %v; want %d", v, err, ver)
	}
	if err := c.FeedbackLog(log.Address()).CheckInterface(ctx); err != nil {
		t.Fatalf("CheckInterface: %v", err)
	}

	t.Run("BlockHash", func(t *testing.T) {
		n, h, _, err := c.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.BlockHash(ctx, n)
		if err != nil || got != h {
			t.Errorf("BlockHash(%d) = %x, %v; want %x", n, got, err, h)
		}
		if h, err := c.BlockHash(ctx, n+1000); err != nil || h != ([32]byte{}) {
			t.Errorf("BlockHash of a block the chain lacks = %x, %v; want zero, nil", h, err)
		}
	})

	t.Run("WrongChainID", func(t *testing.T) {
		_, err := Dial(ctx, b.url, Options{ChainID: c.ChainID() + 1})
		if !errors.Is(err, ErrWrongChain) {
			t.Fatalf("Dial with wrong chain id: got %v, want ErrWrongChain", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(c.ChainID())) {
			t.Errorf("error %q should name the node's chain id", err)
		}
	})

	t.Run("DirectSubmitAndRead", func(t *testing.T) {
		before, err := log.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := log.Submit(ctx, b.sponsor, "qa/v1 source=qa-smoke sev=info surface=chain\nhello")
		if err != nil {
			t.Fatal(err)
		}
		if s.Index != before || s.Sender != b.sponsor.Address() {
			t.Errorf("submission = %+v, want index %d sender %s", s, before, b.sponsor.Address())
		}
		e, err := log.At(ctx, s.Index)
		if err != nil {
			t.Fatal(err)
		}
		if e.Sender != b.sponsor.Address() || !strings.HasSuffix(e.Text, "hello") || e.Time.IsZero() {
			t.Errorf("At(%d) = %+v", s.Index, e)
		}
		t.Logf("submitFeedback (%d bytes): gas used %d", len(e.Text), s.GasUsed)
	})

	t.Run("SponsoredFromUnfundedIdentity", func(t *testing.T) {
		identity, _ := GenerateKey()
		s, err := log.SubmitFor(ctx, identity, b.sponsor, "an operator's note")
		if err != nil {
			t.Fatal(err)
		}
		e, err := log.At(ctx, s.Index)
		if err != nil {
			t.Fatal(err)
		}
		if e.Sender != identity.Address() {
			t.Errorf("recorded sender %s, want the identity %s (not the sponsor)", e.Sender, identity.Address())
		}
		if bal, _ := c.Balance(ctx, identity.Address()); bal.Sign() != 0 {
			t.Errorf("identity balance %s, want 0: the sponsor pays", bal)
		}
		// A second one from the same identity, even with the same text, goes
		// under its own key.
		if _, err := log.SubmitFor(ctx, identity, b.sponsor, "an operator's note"); err != nil {
			t.Fatalf("second sponsored submission: %v", err)
		}
		t.Logf("submitFeedbackFor: gas used %d", s.GasUsed)
	})

	t.Run("DigestMatchesContract", func(t *testing.T) {
		identity, _ := GenerateKey()
		key, deadline := FingerprintKey("5c1e0a9d"), big.NewInt(1_900_000_000)
		prev := new(big.Int).Or(new(big.Int).Lsh(big.NewInt(7), 64), big.NewInt(1_800_000_000))
		out, err := c.call(ctx, log.addr, log.b.PackFeedbackDigest(identity.addr, "text", key, prev, deadline), nil, log.abi)
		if err != nil {
			t.Fatal(err)
		}
		want, err := log.b.UnpackFeedbackDigest(out)
		if err != nil {
			t.Fatal(err)
		}
		if got := FeedbackDigestV(ver, c.chainID.Load(), log.addr, identity.addr, "text", key, prev, deadline); got != common.Hash(want) {
			t.Errorf("Go digest %s != contract digest %x", got, want)
		}
	})

	t.Run("BadText", func(t *testing.T) {
		for _, tc := range []struct {
			text    string
			local   error
			revert  string
			revArgs string
		}{
			{"", ErrEmptyText, "EmptyText", "EmptyText()"},
			{strings.Repeat("x", MaxText+1), ErrTextTooLong, "TextTooLong", "TextTooLong(length=2049, max=2048)"},
		} {
			if _, err := log.Submit(ctx, b.sponsor, tc.text); !errors.Is(err, tc.local) {
				t.Errorf("Submit(%d bytes) = %v, want %v before sending", len(tc.text), err, tc.local)
			}
			if _, err := log.SubmitFor(ctx, b.sponsor, b.sponsor, tc.text); !errors.Is(err, tc.local) {
				t.Errorf("SubmitFor(%d bytes) = %v, want %v before sending", len(tc.text), err, tc.local)
			}
			_, err := log.submit(ctx, b.sponsor, tc.text) // skip the local check
			if !IsRevert(err, tc.revert) || !strings.Contains(err.Error(), tc.revArgs) {
				t.Errorf("contract refusal of %d bytes = %v, want revert %s", len(tc.text), err, tc.revArgs)
			}
		}
		if _, err := log.Submit(ctx, b.sponsor, strings.Repeat("é", MaxText/2)); err != nil {
			t.Errorf("exactly %d bytes refused: %v", MaxText, err)
		}
	})

	t.Run("ReplayedSignature", func(t *testing.T) {
		identity, _ := GenerateKey()
		deadline, err := log.deadline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		key, zero := FingerprintKey("replay"), new(big.Int)
		sig, err := log.sign(c.chainID.Load(), identity, ver, "once", key, zero, deadline)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.relay(ctx, identity.addr, b.sponsor, "once", key, zero, deadline, sig); err != nil {
			t.Fatal(err)
		}
		_, err = log.relay(ctx, identity.addr, b.sponsor, "once", key, zero, deadline, sig)
		if !IsRevert(err, "StaleKey") {
			t.Errorf("replay = %v, want StaleKey", err)
		}
		// Claiming the new stamp with the old signature fails too.
		st, _ := log.KeyStamp(ctx, identity.Address(), key)
		if st.Uses != 1 || st.Time.IsZero() {
			t.Errorf("stamp after one entry = %+v", st)
		}
		_, err = log.relay(ctx, identity.addr, b.sponsor, "once", key, st.raw, deadline, sig)
		if !IsRevert(err, "BadSignature") {
			t.Errorf("replay against the new stamp = %v, want BadSignature", err)
		}
	})

	t.Run("KeyedDedupe", func(t *testing.T) {
		identity, _ := GenerateKey()
		key := FingerprintKey("abcdef0123456789")
		first, err := log.SubmitKeyed(ctx, identity, b.sponsor, "qa/v1 finding", key, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, err = log.SubmitKeyed(ctx, identity, b.sponsor, "qa/v1 finding, reworded", key, time.Hour)
		var dup *DuplicateError
		if !errors.As(err, &dup) || !errors.Is(err, ErrDuplicate) || dup.Raced || dup.Stamp.Uses != 1 {
			t.Fatalf("second keyed submission within the window = %v, want a duplicate", err)
		}
		// Outside the window (0 here) it goes in again, under the same key.
		second, err := log.SubmitKeyed(ctx, identity, b.sponsor, "qa/v1 finding, again", key, 0)
		if err != nil || second.Index <= first.Index {
			t.Fatalf("keyed submission after the window = %+v, %v", second, err)
		}
		// Two contenders that read the same stamp: one lands, the other is
		// a duplicate (the compare-and-swap), never both.
		st, _ := log.KeyStamp(ctx, identity.Address(), key)
		if _, err := log.submitKeyed(ctx, identity, b.sponsor, "contender A", key, st.raw); err != nil {
			t.Fatal(err)
		}
		if _, err := log.submitKeyed(ctx, identity, b.sponsor, "contender B", key, st.raw); !IsRevert(err, "StaleKey") {
			t.Errorf("the second contender = %v, want StaleKey", err)
		}
		// The identity may be the sponsor itself: still keyed.
		if _, err := log.SubmitKeyed(ctx, b.sponsor, b.sponsor, "self-relayed", key, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := log.SubmitKeyed(ctx, b.sponsor, b.sponsor, "self-relayed again", key, time.Hour); !errors.Is(err, ErrDuplicate) {
			t.Errorf("self-relayed duplicate = %v", err)
		}
	})

	t.Run("ExpiredSignature", func(t *testing.T) {
		identity, _ := GenerateKey()
		_, _, head, err := c.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		deadline := big.NewInt(head.Unix() - 1)
		key, zero := FingerprintKey("late"), new(big.Int)
		sig, err := log.sign(c.chainID.Load(), identity, ver, "late", key, zero, deadline)
		if err != nil {
			t.Fatal(err)
		}
		_, err = log.relay(ctx, identity.addr, b.sponsor, "late", key, zero, deadline, sig)
		if !IsRevert(err, "Expired") {
			t.Errorf("expired = %v, want Expired", err)
		}
	})

	t.Run("WrongSigner", func(t *testing.T) {
		identity, _ := GenerateKey()
		impostor, _ := GenerateKey()
		deadline, _ := log.deadline(ctx)
		key, zero := FingerprintKey("spoof"), new(big.Int)
		sig, _ := log.sign(c.chainID.Load(), impostor, ver, "spoof", key, zero, deadline)
		_, err := log.relay(ctx, identity.addr, b.sponsor, "spoof", key, zero, deadline, sig)
		if !IsRevert(err, "BadSignature") {
			t.Errorf("impostor signature = %v, want BadSignature", err)
		}
	})

	t.Run("IndexOutOfRange", func(t *testing.T) {
		n, _ := log.Count(ctx)
		_, err := log.At(ctx, n+5)
		if !IsRevert(err, "IndexOutOfRange") {
			t.Errorf("At past the end = %v, want IndexOutOfRange", err)
		}
		page, err := log.Range(ctx, n+5, 10)
		if err != nil || len(page) != 0 {
			t.Errorf("Range past the end = %d entries, %v; want none, no error", len(page), err)
		}
	})

	t.Run("GuardRefusesAdminSelector", func(t *testing.T) {
		nonceBefore, _ := c.eth.PendingNonceAt(ctx, b.sponsor.addr)
		data := crypto.Keccak256([]byte("adminResetAll()"))[:4]
		_, err := c.SendRaw(ctx, b.sponsor, log.Address(), data, nil)
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("raw adminResetAll() = %v, want ErrRefused", err)
		}
		if after, _ := c.eth.PendingNonceAt(ctx, b.sponsor.addr); after != nonceBefore {
			t.Errorf("nonce moved %d -> %d: a refused transaction was sent", nonceBefore, after)
		}
	})

	t.Run("GasPriceCap", func(t *testing.T) {
		g, err := NewGuard(GuardConfig{MaxFeePerGas: big.NewInt(1)})
		if err != nil {
			t.Fatal(err)
		}
		capped, err := Dial(ctx, b.url, Options{Guard: g})
		if err != nil {
			t.Fatal(err)
		}
		defer capped.Close()
		_, err = capped.FeedbackLog(log.Address()).Submit(ctx, b.sponsor, "too pricey")
		var re *RefusedError
		if !errors.As(err, &re) || re.Rule != "gas-price" {
			t.Errorf("submit over the fee cap = %v, want a gas-price refusal", err)
		}
	})

	t.Run("ScanPagesUnderGasCap", func(t *testing.T) {
		// A fresh log with more maximum-size entries than fit one eth_call
		// (FACTS.md: ~100 such entries cost ~15M gas), plus short ones.
		l2, _, err := deployVersion(ctx, c, b.sponsor, ver)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 130 {
			text := fmt.Sprintf("entry %d ", i)
			if i%2 == 0 {
				text += strings.Repeat("z", MaxText-len(text))
			}
			want = append(want, text)
		}
		submitAll(t, l2, b.sponsor, want)
		var got []string
		pages := 0
		res, err := l2.Scan(ctx, 0, func(page []Entry) error {
			pages++
			for _, e := range page {
				if e.Index != uint64(len(got)) {
					return fmt.Errorf("entry index %d at position %d", e.Index, len(got))
				}
				got = append(got, e.Text)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || res.Next != uint64(len(want)) {
			t.Fatalf("scanned %d entries (next %d), want %d", len(got), res.Next, len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("entry %d differs", i)
			}
		}
		if ver == 1 && pages < 2 {
			// v2 pages hold records, not texts: their size does not depend
			// on the texts, which come from logs.
			t.Errorf("scan used %d page(s); max-size entries should need several", pages)
		}
		// Incremental: scanning from the end reads nothing new.
		res2, err := l2.Scan(ctx, res.Next, func([]Entry) error { t.Error("unexpected page"); return nil })
		if err != nil || res2.Next != res.Next {
			t.Errorf("incremental scan = %+v, %v", res2, err)
		}
	})
}

// submitAll appends texts in order, one transaction each.
func submitAll(tb testing.TB, l *FeedbackLog, sponsor *Key, texts []string) {
	tb.Helper()
	ctx := context.Background()
	for _, text := range texts {
		if _, err := l.Submit(ctx, sponsor, text); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestDialUnreachable(t *testing.T) {
	ctx := context.Background()
	// Nothing listens: refused at once.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := Dial(ctx, "http://"+addr, Options{Timeout: 2 * time.Second}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("closed port: %v, want ErrUnreachable", err)
	}
	// Something accepts but never answers: the timeout must end the wait.
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	go func() {
		for {
			conn, err := hole.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	start := time.Now()
	_, err = Dial(ctx, "http://"+hole.Addr().String(), Options{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("black hole: %v, want ErrUnreachable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("black hole took %s; the timeout was 300ms", d)
	}
	if _, err := Dial(ctx, "not a url", Options{Timeout: time.Second}); err == nil {
		t.Error("Dial of a non-URL succeeded")
	}
}

func TestRevertErrorMessage(t *testing.T) {
	a := feedbackBinding.GetABI()
	id := a.Errors["TextTooLong"].ID
	data := append([]byte{}, id[:4]...)
	args, _ := a.Errors["TextTooLong"].Inputs.Pack(big.NewInt(2049), big.NewInt(2048))
	re := revertFromData(append(data, args...), &a)
	if re.Name != "TextTooLong" || re.Error() != "execution reverted: TextTooLong(length=2049, max=2048)" {
		t.Errorf("decoded %q / %q", re.Name, re.Error())
	}
	if re := revertFromData([]byte{1, 2}, &a); re.Name != "" || !strings.Contains(re.Error(), "0x0102") {
		t.Errorf("short data decoded as %+v", re)
	}
	if re := revertFromData([]byte{0xde, 0xad, 0xbe, 0xef}, &a); re.Name != "" {
		t.Errorf("unknown selector decoded as %q", re.Name)
	}
}

// jsonLine is how the CLI prints results; the chain types must encode cleanly.
func TestEntryJSON(t *testing.T) {
	a, _ := fleet.ParseAddress("0x00000000000000000000000000000000000000aa")
	b, err := json.Marshal(Entry{Index: 3, Sender: a, Time: time.Unix(0, 0).UTC(), Text: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"index":3,"sender":"0x00000000000000000000000000000000000000aa","time":"1970-01-01T00:00:00Z","text":"t"}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

func TestRegistryAndReads(t *testing.T) {
	b := mustDevchain(t)
	c := mustDial(t, b.url)
	ctx := context.Background()
	reg, _, err := c.DeployNameRegistry(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := GenerateKey()
	if _, err := c.Transfer(ctx, b.sponsor, user.Address(), ether); err != nil {
		t.Fatal(err)
	}
	r, err := reg.Register(ctx, user, "qa-r1-0")
	if err != nil {
		t.Fatal(err)
	}
	if r.GasEstimated == 0 || r.GasUsed == 0 || r.GasUsed > r.GasLimit {
		t.Errorf("receipt gas: %+v", r)
	}
	if owner, err := reg.OwnerOf(ctx, "qa-r1-0"); err != nil || owner != user.Address() {
		t.Errorf("OwnerOf = %s, %v", owner, err)
	}
	face := MetadataKey("face")
	if _, err := reg.SetMetadata(ctx, user, "qa-r1-0", face, []byte("<h1>hi</h1>")); err != nil {
		t.Fatal(err)
	}
	if v, err := reg.Metadata(ctx, "qa-r1-0", face); err != nil || string(v) != "<h1>hi</h1>" {
		t.Errorf("Metadata = %q, %v", v, err)
	}
	stranger, _ := GenerateKey()
	c.Transfer(ctx, b.sponsor, stranger.Address(), ether)
	if _, err := reg.Release(ctx, stranger, "qa-r1-0"); !IsRevert(err, "NotOwner") {
		t.Errorf("stranger release = %v, want NotOwner", err)
	}
	if _, err := reg.Release(ctx, user, "qa-r1-0"); err != nil {
		t.Fatal(err)
	}
	if owner, _ := reg.OwnerOf(ctx, "qa-r1-0"); !owner.IsZero() {
		t.Errorf("owner after release = %s", owner)
	}

	// Admin functions simulated from a fresh address revert (reference registry).
	for _, sig := range []string{"adminBurn(string[])", "adminResetAll()"} {
		data, err := ZeroCalldata(sig)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallAs(ctx, stranger.Address(), reg.Address(), data); !IsRevert(err, "") {
			t.Errorf("%s from a stranger: %v, want a revert", sig, err)
		}
		if _, err := c.CallAs(ctx, b.sponsor.Address(), reg.Address(), data); err != nil {
			t.Errorf("%s from the owner: %v", sig, err)
		}
	}
	if _, err := ZeroCalldata("f((uint256,address))"); err == nil {
		t.Error("tuple accepted")
	}
	if _, err := ZeroCalldata("notasignature"); err == nil {
		t.Error("bad signature accepted")
	}

	// Read-only passthrough.
	out, err := c.ReadRPC(ctx, "eth_chainId", nil)
	if err != nil || string(out) != `"0x539"` {
		t.Errorf("eth_chainId = %s, %v", out, err)
	}
	if _, err := c.ReadRPC(ctx, "eth_getBalance", json.RawMessage(`["`+user.Address().String()+`","latest"]`)); err != nil {
		t.Errorf("eth_getBalance: %v", err)
	}
	for _, m := range []string{"eth_sendRawTransaction", "eth_sendTransaction", "personal_unlockAccount", "debug_traceTransaction", "admin_addPeer", "eth_sign", "miner_start", ""} {
		if _, err := c.ReadRPC(ctx, m, json.RawMessage(`[]`)); !errors.Is(err, ErrRefused) {
			t.Errorf("ReadRPC(%q) = %v, want ErrRefused", m, err)
		}
	}
	if _, err := c.ReadRPC(ctx, "eth_call", json.RawMessage(`{"not":"an array"}`)); err == nil {
		t.Error("non-array params accepted")
	}
}

func TestEvents(t *testing.T) {
	b := mustDevchain(t)
	c := mustDial(t, b.url)
	ctx := context.Background()
	reg, rc, err := c.DeployNameRegistry(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	h1, err := c.CodeHash(ctx, reg.Address(), rc.Block)
	if err != nil || h1 == crypto.Keccak256Hash(nil) {
		t.Fatalf("code hash %x %v", h1, err)
	}
	if h0, _ := c.CodeHash(ctx, reg.Address(), rc.Block-1); h0 != crypto.Keccak256Hash(nil) {
		t.Errorf("code before deploy: %x", h0)
	}
	r1, _ := reg.Register(ctx, b.sponsor, "one")
	reg.Register(ctx, b.sponsor, "two")
	head, _ := c.BlockNumber(ctx)
	logs, err := c.FilterLogs(ctx, reg.Address(), TopicRegistered, rc.Block, head)
	if err != nil || len(logs) != 2 || logs[0].Block != r1.Block || logs[0].TxHash != common.HexToHash(r1.Tx) {
		t.Fatalf("logs %+v %v", logs, err)
	}
	if logs, _ := c.FilterLogs(ctx, reg.Address(), TopicRegistered, r1.Block+1, head); len(logs) != 1 {
		t.Errorf("range filter returned %d logs", len(logs))
	}
}

// TestSponsoredAcrossProcesses: four clients (four processes) sign for one
// identity and relay with one sponsor key at once: nothing is shared but the
// chain. Every unkeyed submission must land exactly once, none may fail, and
// of the submissions racing under one finding's key exactly one lands.
func TestSponsoredAcrossProcesses(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	procs := make([]*FeedbackLog, 4)
	first, _, err := mustDial(t, b.url).DeployFeedbackLog(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	for i := range procs {
		procs[i] = mustDial(t, b.url).FeedbackLog(first.Address())
	}
	identity, _ := GenerateKey()
	const each = 6
	key := FingerprintKey("0123456789abcdef")
	errs := make(chan error, len(procs)*each)
	var landed, dups atomic.Int32
	var wg sync.WaitGroup
	for p, l := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := l.SubmitFor(ctx, identity, b.sponsor, fmt.Sprintf("process %d entry %d", p, i))
				errs <- err
			}
			switch _, err := l.SubmitKeyed(ctx, identity, b.sponsor, fmt.Sprintf("the same finding, seen by process %d", p), key, time.Hour); {
			case err == nil:
				landed.Add(1)
			case errors.Is(err, ErrDuplicate):
				dups.Add(1)
			default:
				t.Errorf("keyed submission: %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("submission failed: %v", err)
		}
	}
	if landed.Load() != 1 || dups.Load() != int32(len(procs)-1) {
		t.Errorf("keyed race: %d landed, %d duplicates; want 1 and %d", landed.Load(), dups.Load(), len(procs)-1)
	}
	if n, _ := first.Count(ctx); n != uint64(len(procs)*each+1) {
		t.Errorf("%d entries, want %d", n, len(procs)*each+1)
	}
}
