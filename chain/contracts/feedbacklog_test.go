package contracts

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// sim is a simulated chain with funded keys.
type sim struct {
	t       *testing.T
	backend *simulated.Backend
	client  simulated.Client
	chainID *big.Int
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mustSim starts a simulated chain in which each of funded holds 100 ether.
// With todaysForks the chain runs without the future forks the simulated
// backend enables by default, so gas is what today's mainnet charges.
func mustSim(t *testing.T, todaysForks bool, funded ...*ecdsa.PrivateKey) *sim {
	t.Helper()
	alloc := types.GenesisAlloc{}
	ether := new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil) // 100 ether
	for _, k := range funded {
		alloc[crypto.PubkeyToAddress(k.PublicKey)] = types.Account{Balance: ether}
	}
	var opts []func(*node.Config, *ethconfig.Config)
	if todaysForks {
		opts = append(opts, func(_ *node.Config, ec *ethconfig.Config) {
			cfg := *ec.Genesis.Config
			cfg.BogotaTime = nil
			ec.Genesis.Config = &cfg
		})
	}
	b := simulated.NewBackend(alloc, opts...)
	t.Cleanup(func() { b.Close() })
	id, err := b.Client().ChainID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, backend: b, client: b.Client(), chainID: id}
}

func (s *sim) opts(k *ecdsa.PrivateKey) *bind.TransactOpts {
	return bind.NewKeyedTransactor(k, s.chainID)
}

func (s *sim) deploy(k *ecdsa.PrivateKey, meta *bind.MetaData) common.Address {
	s.t.Helper()
	addr, tx, err := bind.DeployContract(s.opts(k), common.FromHex(meta.Bin), s.client, nil)
	if err != nil {
		s.t.Fatalf("deploy %s: %v", meta.ID, err)
	}
	s.backend.Commit()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bind.WaitDeployed(ctx, s.client, tx.Hash()); err != nil {
		s.t.Fatalf("deploy %s: %v", meta.ID, err)
	}
	return addr
}

// send transacts data and mines it, returning the receipt or the send error
// (a revert is reported by gas estimation, before anything is sent).
func (s *sim) send(c *bind.BoundContract, k *ecdsa.PrivateKey, data []byte) (*types.Receipt, error) {
	s.t.Helper()
	tx, err := bind.Transact(c, s.opts(k), data)
	if err != nil {
		return nil, err
	}
	s.backend.Commit()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := bind.WaitMined(ctx, s.client, tx.Hash())
	if err != nil {
		s.t.Fatalf("wait mined: %v", err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		s.t.Fatalf("tx %s failed (gas used %d)", tx.Hash(), r.GasUsed)
	}
	return r, nil
}

func (s *sim) mustSend(c *bind.BoundContract, k *ecdsa.PrivateKey, data []byte) *types.Receipt {
	s.t.Helper()
	r, err := s.send(c, k, data)
	if err != nil {
		s.t.Fatalf("transact: %v", err)
	}
	return r
}

func (s *sim) headTime() uint64 {
	s.t.Helper()
	h, err := s.client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return h.Time
}

func mustCall[T any](t *testing.T, c *bind.BoundContract, data []byte, unpack func([]byte) (T, error)) T {
	t.Helper()
	v, err := bind.Call(c, nil, data, unpack)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return v
}

// revert returns the custom error err carries, decoded by unpack (a
// binding's UnpackError).
func revert(t *testing.T, err error, unpack func([]byte) (any, error)) any {
	t.Helper()
	if err == nil {
		t.Fatal("succeeded, want a revert")
	}
	data, ok := ethclient.RevertErrorData(err)
	if !ok || len(data) < 4 {
		t.Fatalf("no custom error in %v", err)
	}
	v, uerr := unpack(data)
	if uerr != nil {
		t.Fatalf("decode revert %x: %v", data, uerr)
	}
	return v
}

// as asserts that v is a *E and returns it.
func as[E any](t *testing.T, v any) *E {
	t.Helper()
	e, ok := v.(*E)
	if !ok {
		var want *E
		t.Fatalf("revert is %T %+v, want %T", v, v, want)
	}
	return e
}

func u(n uint64) *big.Int { return new(big.Int).SetUint64(n) }

// typedFeedback is the EIP-712 typed data a sender signs for submitFeedbackFor.
func typedFeedback(chainID *big.Int, contract, sender common.Address, text string, key [32]byte, prev, deadline *big.Int) apitypes.TypedData {
	return apitypes.TypedData{
		Types: apitypes.Types{
			"EIP712Domain": {
				{Name: "name", Type: "string"},
				{Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"},
				{Name: "verifyingContract", Type: "address"},
			},
			"Feedback": {
				{Name: "sender", Type: "address"},
				{Name: "text", Type: "string"},
				{Name: "key", Type: "bytes32"},
				{Name: "prev", Type: "uint256"},
				{Name: "deadline", Type: "uint256"},
			},
		},
		PrimaryType: "Feedback",
		Domain: apitypes.TypedDataDomain{
			Name:              "FeedbackLog",
			Version:           "1",
			ChainId:           (*math.HexOrDecimal256)(chainID),
			VerifyingContract: contract.Hex(),
		},
		Message: apitypes.TypedDataMessage{
			"sender":   sender.Hex(),
			"text":     text,
			"key":      key[:],
			"prev":     prev,
			"deadline": deadline,
		},
	}
}

// manualDigest hashes the same typed data by hand, as the contract does.
func manualDigest(chainID *big.Int, contract, sender common.Address, text string, key [32]byte, prev, deadline *big.Int) []byte {
	word := func(b *big.Int) []byte { return common.LeftPadBytes(b.Bytes(), 32) }
	domain := crypto.Keccak256(
		crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")),
		crypto.Keccak256([]byte("FeedbackLog")),
		crypto.Keccak256([]byte("1")),
		word(chainID),
		common.LeftPadBytes(contract.Bytes(), 32),
	)
	structHash := crypto.Keccak256(
		crypto.Keccak256([]byte("Feedback(address sender,string text,bytes32 key,uint256 prev,uint256 deadline)")),
		common.LeftPadBytes(sender.Bytes(), 32),
		crypto.Keccak256([]byte(text)),
		key[:],
		word(prev),
		word(deadline),
	)
	return crypto.Keccak256([]byte("\x19\x01"), domain, structHash)
}

func signFeedback(t *testing.T, k *ecdsa.PrivateKey, td apitypes.TypedData) (digest, sig []byte) {
	t.Helper()
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatal(err)
	}
	sig, err = crypto.Sign(digest, k) // r ‖ s ‖ v with v in {0, 1} and low s
	if err != nil {
		t.Fatal(err)
	}
	return digest, sig
}

func TestFeedbackLog(t *testing.T) {
	relayer, alice := newKey(t), newKey(t)
	s := mustSim(t, false, relayer, alice)
	fl := NewFeedbackLog()
	addr := s.deploy(relayer, &FeedbackLogMetaData)
	c := fl.Instance(s.client, addr)
	aliceAddr := crypto.PubkeyToAddress(alice.PublicKey)

	if got := mustCall(t, c, fl.PackMAXTEXT(), fl.UnpackMAXTEXT); got.Cmp(u(2048)) != 0 {
		t.Errorf("MAX_TEXT = %v, want 2048", got)
	}
	if got := mustCall(t, c, fl.PackFeedbackCount(), fl.UnpackFeedbackCount); got.Sign() != 0 {
		t.Errorf("empty log: feedbackCount = %v", got)
	}
	if got := mustCall(t, c, fl.PackFeedbackRange(u(0), u(10)), fl.UnpackFeedbackRange); len(got) != 0 {
		t.Errorf("empty log: feedbackRange(0, 10) has %d entries", len(got))
	}

	texts := []string{"qa/v1 first", "second", strings.Repeat("x", 2048)}
	for i, text := range texts {
		r := s.mustSend(c, alice, fl.PackSubmitFeedback(text))
		if len(r.Logs) != 1 {
			t.Fatalf("submit %d: %d logs, want 1", i, len(r.Logs))
		}
		ev, err := fl.UnpackFeedbackSubmittedEvent(r.Logs[0])
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		if ev.Id.Cmp(u(uint64(i))) != 0 || ev.Sender != aliceAddr || ev.Timestamp == 0 {
			t.Errorf("submit %d: event %+v, want id %d sender %s", i, ev, i, aliceAddr)
		}
	}
	if got := mustCall(t, c, fl.PackFeedbackCount(), fl.UnpackFeedbackCount); got.Cmp(u(3)) != 0 {
		t.Fatalf("feedbackCount = %v, want 3", got)
	}
	for i, text := range texts {
		e := mustCall(t, c, fl.PackFeedbackAt(u(uint64(i))), fl.UnpackFeedbackAt)
		if e.Sender != aliceAddr || e.Text != text || e.Timestamp == 0 {
			t.Errorf("feedbackAt(%d) = {%s %d %.20q}, want sender %s text %.20q", i, e.Sender, e.Timestamp, e.Text, aliceAddr, text)
		}
	}
	_, err := bind.Call(c, nil, fl.PackFeedbackAt(u(3)), fl.UnpackFeedbackAt)
	if e := as[FeedbackLogIndexOutOfRange](t, revert(t, err, fl.UnpackError)); e.Index.Cmp(u(3)) != 0 || e.Count.Cmp(u(3)) != 0 {
		t.Errorf("feedbackAt(3): %+v, want IndexOutOfRange(3, 3)", e)
	}

	maxUint := math.MaxBig256
	for _, tc := range []struct {
		start, count *big.Int
		want         []string
	}{
		{u(0), u(10), texts},
		{u(0), u(3), texts},
		{u(1), u(1), texts[1:2]},
		{u(1), maxUint, texts[1:]},
		{u(2), u(0), nil},
		{u(3), u(1), nil},
		{maxUint, maxUint, nil},
	} {
		got := mustCall(t, c, fl.PackFeedbackRange(tc.start, tc.count), fl.UnpackFeedbackRange)
		var gotTexts []string
		for _, e := range got {
			gotTexts = append(gotTexts, e.Text)
		}
		if !equalStrings(gotTexts, tc.want) {
			t.Errorf("feedbackRange(%v, %v): %d entries, want %d", tc.start, tc.count, len(gotTexts), len(tc.want))
		}
	}

	_, err = s.send(c, alice, fl.PackSubmitFeedback(""))
	as[FeedbackLogEmptyText](t, revert(t, err, fl.UnpackError))
	_, err = s.send(c, alice, fl.PackSubmitFeedback(strings.Repeat("y", 2049)))
	if e := as[FeedbackLogTextTooLong](t, revert(t, err, fl.UnpackError)); e.Length.Cmp(u(2049)) != 0 || e.Max.Cmp(u(2048)) != 0 {
		t.Errorf("2049 bytes: %+v, want TextTooLong(2049, 2048)", e)
	}
	if got := mustCall(t, c, fl.PackFeedbackCount(), fl.UnpackFeedbackCount); got.Cmp(u(3)) != 0 {
		t.Errorf("after refused submissions feedbackCount = %v, want 3", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFeedbackLogSignedSubmission(t *testing.T) {
	relayer := newKey(t)
	signer, mallory := newKey(t), newKey(t) // neither holds any funds
	s := mustSim(t, false, relayer)
	fl := NewFeedbackLog()
	addr := s.deploy(relayer, &FeedbackLogMetaData)
	c := fl.Instance(s.client, addr)
	signerAddr := crypto.PubkeyToAddress(signer.PublicKey)
	relayerAddr := crypto.PubkeyToAddress(relayer.PublicKey)

	if bal, err := s.client.BalanceAt(context.Background(), signerAddr, nil); err != nil || bal.Sign() != 0 {
		t.Fatalf("signer balance %v, %v; want 0", bal, err)
	}

	const text = `{"v":"qa/v1","title":"signed finding"}`
	key := crypto.Keccak256Hash([]byte("fleetd/finding/0123456789abcdef"))
	prev := mustCall(t, c, fl.PackKeyStamp(signerAddr, key), fl.UnpackKeyStamp)
	if prev.Sign() != 0 {
		t.Fatalf("fresh key stamp = %v", prev)
	}
	deadline := u(s.headTime() + 3600)
	td := typedFeedback(s.chainID, addr, signerAddr, text, key, prev, deadline)
	digest, sig := signFeedback(t, signer, td)

	// The contract, apitypes and a hand-rolled hash agree on the digest.
	onChain := mustCall(t, c, fl.PackFeedbackDigest(signerAddr, text, key, prev, deadline), fl.UnpackFeedbackDigest)
	if !bytes.Equal(onChain[:], digest) {
		t.Fatalf("feedbackDigest = %x, apitypes digest = %x", onChain, digest)
	}
	if m := manualDigest(s.chainID, addr, signerAddr, text, key, prev, deadline); !bytes.Equal(m, digest) {
		t.Fatalf("manual digest %x, apitypes digest %x", m, digest)
	}
	domain, err := td.HashStruct("EIP712Domain", td.Domain.Map())
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCall(t, c, fl.PackDomainSeparator(), fl.UnpackDomainSeparator); !bytes.Equal(got[:], domain) {
		t.Errorf("domainSeparator = %x, apitypes %x", got, domain)
	}
	submit := func(text string, key [32]byte, prev, deadline *big.Int, sig []byte) []byte {
		return fl.PackSubmitFeedbackFor(signerAddr, text, key, prev, deadline, sig)
	}

	// A signature whose s is in the upper half (the malleable twin) is refused.
	_, err = s.send(c, relayer, submit(text, key, prev, deadline, highS(sig)))
	as[FeedbackLogBadSignature](t, revert(t, err, fl.UnpackError))

	// A signature by someone else is refused.
	_, wrong := signFeedback(t, mallory, td)
	_, err = s.send(c, relayer, submit(text, key, prev, deadline, wrong))
	as[FeedbackLogBadSignature](t, revert(t, err, fl.UnpackError))

	// A truncated signature is refused.
	_, err = s.send(c, relayer, submit(text, key, prev, deadline, sig[:64]))
	as[FeedbackLogBadSignature](t, revert(t, err, fl.UnpackError))

	// The relayer pays; the entry records the signer.
	r := s.mustSend(c, relayer, submit(text, key, prev, deadline, sig))
	t.Logf("submitFeedbackFor (%d bytes): gas used %d", len(text), r.GasUsed)
	ev, err := fl.UnpackFeedbackSubmittedEvent(r.Logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if ev.Sender != signerAddr {
		t.Errorf("event sender %s, want signer %s", ev.Sender, signerAddr)
	}
	e := mustCall(t, c, fl.PackFeedbackAt(u(0)), fl.UnpackFeedbackAt)
	if e.Sender != signerAddr || e.Text != text {
		t.Errorf("entry {%s %q}, want {%s %q}", e.Sender, e.Text, signerAddr, text)
	}
	if e.Sender == relayerAddr {
		t.Error("entry records the relayer")
	}
	stamp := mustCall(t, c, fl.PackKeyStamp(signerAddr, key), fl.UnpackKeyStamp)
	if uses, at := new(big.Int).Rsh(stamp, 64), new(big.Int).And(stamp, new(big.Int).SetUint64(1<<64-1)); uses.Cmp(u(1)) != 0 || at.Sign() == 0 {
		t.Errorf("stamp after one entry = %v, want 1 use and a time", stamp)
	}
	if bal, _ := s.client.BalanceAt(context.Background(), signerAddr, nil); bal.Sign() != 0 {
		t.Errorf("signer balance %v after relayed submission, want 0", bal)
	}

	// Replaying the same signature fails: the stamp moved (StaleKey); and
	// naming the new stamp with the old signature signs another digest.
	_, err = s.send(c, relayer, submit(text, key, prev, deadline, sig))
	if e := as[FeedbackLogStaleKey](t, revert(t, err, fl.UnpackError)); e.Expected.Sign() != 0 || e.Actual.Cmp(stamp) != 0 {
		t.Errorf("replay: %+v, want StaleKey(expected 0, actual %v)", e, stamp)
	}
	_, err = s.send(c, relayer, submit(text, key, stamp, deadline, sig))
	as[FeedbackLogBadSignature](t, revert(t, err, fl.UnpackError))

	// The same key again, signed over the new stamp: accepted, and the use count goes on.
	_, again := signFeedback(t, signer, typedFeedback(s.chainID, addr, signerAddr, "again", key, stamp, deadline))
	s.mustSend(c, relayer, submit("again", key, stamp, deadline, again))
	if got := new(big.Int).Rsh(mustCall(t, c, fl.PackKeyStamp(signerAddr, key), fl.UnpackKeyStamp), 64); got.Cmp(u(2)) != 0 {
		t.Errorf("uses after two entries = %v, want 2", got)
	}

	// v in {27, 28} is accepted as well as {0, 1}; another key is independent.
	other := crypto.Keccak256Hash([]byte("another key"))
	_, sig27 := signFeedback(t, signer, typedFeedback(s.chainID, addr, signerAddr, "v27", other, u(0), deadline))
	sig27[64] += 27
	s.mustSend(c, relayer, submit("v27", other, u(0), deadline, sig27))

	// An expired deadline is refused, even with a valid signature.
	late := crypto.Keccak256Hash([]byte("late"))
	past := u(s.headTime() - 1)
	_, sigPast := signFeedback(t, signer, typedFeedback(s.chainID, addr, signerAddr, "late", late, u(0), past))
	_, err = s.send(c, relayer, submit("late", late, u(0), past, sigPast))
	if e := as[FeedbackLogExpired](t, revert(t, err, fl.UnpackError)); e.Deadline.Cmp(past) != 0 || e.NowTs.Cmp(past) <= 0 {
		t.Errorf("expired: %+v, want Expired(%v, later)", e, past)
	}

	// Text rules apply to signed submissions too.
	_, sigEmpty := signFeedback(t, signer, typedFeedback(s.chainID, addr, signerAddr, "", late, u(0), deadline))
	_, err = s.send(c, relayer, submit("", late, u(0), deadline, sigEmpty))
	as[FeedbackLogEmptyText](t, revert(t, err, fl.UnpackError))

	if got := mustCall(t, c, fl.PackFeedbackCount(), fl.UnpackFeedbackCount); got.Cmp(u(3)) != 0 {
		t.Errorf("feedbackCount = %v, want 3", got)
	}
}

// highS turns a low-s signature into its malleable twin (s' = n - s, v flipped).
func highS(sig []byte) []byte {
	out := bytes.Clone(sig)
	s := new(big.Int).SetBytes(sig[32:64])
	s.Sub(crypto.S256().Params().N, s)
	copy(out[32:64], common.LeftPadBytes(s.Bytes(), 32))
	out[64] ^= 1
	return out
}

// TestFeedbackLogGas logs the gas of submitFeedback on the simulated
// backend's default (future-fork) rules and on today's rules.
func TestFeedbackLogGas(t *testing.T) {
	if testing.Short() {
		t.Skip("gas report")
	}
	for _, tc := range []struct {
		name        string
		todaysForks bool
	}{{"future forks (simulated default)", false}, {"today's forks", true}} {
		t.Run(tc.name, func(t *testing.T) {
			k, signer := newKey(t), newKey(t)
			s := mustSim(t, tc.todaysForks, k)
			fl := NewFeedbackLog()
			addr := s.deploy(k, &FeedbackLogMetaData)
			c := fl.Instance(s.client, addr)
			// The first entry also pays for the array length slot going from zero.
			for i, n := range []int{13, 13, 2048} {
				r := s.mustSend(c, k, fl.PackSubmitFeedback(strings.Repeat("z", n)))
				t.Logf("submitFeedback #%d %4d bytes: gas used %d", i, n, r.GasUsed)
			}
			signerAddr := crypto.PubkeyToAddress(signer.PublicKey)
			deadline := u(s.headTime() + 3600)
			// A fresh key (a new finding), then the same key again (a repost).
			key := crypto.Keccak256Hash([]byte("fleetd/finding/0123456789abcdef"))
			prev := u(0)
			for i, what := range []string{"fresh key", "same key", "fresh key, 300 bytes"} {
				text := strings.Repeat("z", 13)
				if i == 2 {
					key, prev = crypto.Keccak256Hash([]byte("fleetd/finding/fedcba9876543210")), u(0)
					text = strings.Repeat("z", 300)
				}
				_, sig := signFeedback(t, signer, typedFeedback(s.chainID, addr, signerAddr, text, key, prev, deadline))
				r := s.mustSend(c, k, fl.PackSubmitFeedbackFor(signerAddr, text, key, prev, deadline, sig))
				t.Logf("submitFeedbackFor #%d (%s) %d bytes: gas used %d", i, what, len(text), r.GasUsed)
				prev = mustCall(t, c, fl.PackKeyStamp(signerAddr, key), fl.UnpackKeyStamp)
			}
		})
	}
}
