package contracts

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// typedFeedbackV2 is typedFeedback in v2's EIP-712 domain (version "2").
func typedFeedbackV2(chainID *big.Int, contract, sender common.Address, text string, key [32]byte, prev, deadline *big.Int) apitypes.TypedData {
	td := typedFeedback(chainID, contract, sender, text, key, prev, deadline)
	td.Domain.Version = "2"
	return td
}

// logsOf returns the receipt's logs with topic0 of the named v2 event.
func logsOf(t *testing.T, r *types.Receipt, event string) []*types.Log {
	t.Helper()
	a, err := FeedbackLogV2MetaData.ParseABI()
	if err != nil {
		t.Fatal(err)
	}
	var out []*types.Log
	for _, l := range r.Logs {
		if len(l.Topics) > 0 && l.Topics[0] == a.Events[event].ID {
			out = append(out, l)
		}
	}
	return out
}

func TestFeedbackLogV2(t *testing.T) {
	relayer, alice := newKey(t), newKey(t)
	s := mustSim(t, true, relayer, alice)
	fl := NewFeedbackLogV2()
	addr := s.deploy(relayer, &FeedbackLogV2MetaData)
	c := fl.Instance(s.client, addr)
	aliceAddr := crypto.PubkeyToAddress(alice.PublicKey)
	relayerAddr := crypto.PubkeyToAddress(relayer.PublicKey)

	if v := mustCall(t, c, fl.PackVersion(), fl.UnpackVersion); v.Cmp(u(2)) != 0 {
		t.Errorf("version() = %v, want 2", v)
	}
	deployBlock := mustCall(t, c, fl.PackDeployBlock(), fl.UnpackDeployBlock)

	// A direct submission: a record in storage, the text in FeedbackText,
	// and v1's FeedbackSubmitted unchanged.
	text := "qa/v1 source=qa-smoke sev=low surface=docs\ndead link: /docs/publish returns 404"
	r := s.mustSend(c, relayer, fl.PackSubmitFeedback(text))
	if n := mustCall(t, c, fl.PackFeedbackCount(), fl.UnpackFeedbackCount); n.Cmp(u(1)) != 0 {
		t.Fatalf("feedbackCount = %v, want 1", n)
	}
	rec := mustCall(t, c, fl.PackRecordAt(u(0)), fl.UnpackRecordAt)
	if rec.Sender != relayerAddr || rec.TextHash != crypto.Keccak256Hash([]byte(text)) || rec.BlockNumber.Uint64() != r.BlockNumber.Uint64() || rec.BlockNumber.Cmp(deployBlock) <= 0 {
		t.Errorf("record 0 = %+v; want sender %s, hash of the text, block %d (after deploy block %v)", rec, relayerAddr, r.BlockNumber, deployBlock)
	}
	texts := logsOf(t, r, "FeedbackText")
	if len(texts) != 1 {
		t.Fatalf("%d FeedbackText logs, want 1", len(texts))
	}
	ev, err := fl.UnpackFeedbackTextEvent(texts[0])
	if err != nil || ev.Text != text || ev.Id.Sign() != 0 {
		t.Errorf("FeedbackText = %+v, %v", ev, err)
	}
	if sub := logsOf(t, r, "FeedbackSubmitted"); len(sub) != 1 || sub[0].Topics[0] != crypto.Keccak256Hash([]byte("FeedbackSubmitted(uint256,address,uint64)")) {
		t.Errorf("FeedbackSubmitted logs %v: want one with v1's topic", sub)
	}

	// A sponsored submission under a key: appended once; the same signature
	// again is a stale key; a signature from someone else is refused.
	key := crypto.Keccak256Hash([]byte("fleetd/finding/00112233aabbccdd"))
	deadline := u(s.headTime() + 3600)
	signed := "qa/v1 source=qa-security sev=high surface=face\nXSS on /search"
	_, sig := signFeedback(t, alice, typedFeedbackV2(s.chainID, addr, aliceAddr, signed, key, u(0), deadline))
	// The contract's digest is v2's domain: cross-check.
	digest := mustCall(t, c, fl.PackFeedbackDigest(aliceAddr, signed, key, u(0), deadline), fl.UnpackFeedbackDigest)
	wantDigest, _ := signFeedback(t, alice, typedFeedbackV2(s.chainID, addr, aliceAddr, signed, key, u(0), deadline))
	if !bytesEqual(digest[:], wantDigest) {
		t.Errorf("feedbackDigest %x, EIP-712 says %x", digest, wantDigest)
	}
	s.mustSend(c, relayer, fl.PackSubmitFeedbackFor(aliceAddr, signed, key, u(0), deadline, sig))
	if rec := mustCall(t, c, fl.PackRecordAt(u(1)), fl.UnpackRecordAt); rec.Sender != aliceAddr {
		t.Errorf("record 1 sender %s, want the signer %s", rec.Sender, aliceAddr)
	}
	_, err = s.send(c, relayer, fl.PackSubmitFeedbackFor(aliceAddr, signed, key, u(0), deadline, sig))
	as[FeedbackLogV2StaleKey](t, revert(t, err, fl.UnpackError))
	_, v1sig := signFeedback(t, alice, typedFeedback(s.chainID, addr, aliceAddr, signed, crypto.Keccak256Hash([]byte("other")), u(0), deadline))
	_, err = s.send(c, relayer, fl.PackSubmitFeedbackFor(aliceAddr, signed, crypto.Keccak256Hash([]byte("other")), u(0), deadline, v1sig))
	as[FeedbackLogV2BadSignature](t, revert(t, err, fl.UnpackError)) // a v1-domain signature is not a v2 one
	_, err = s.send(c, relayer, fl.PackSubmitFeedback(strings.Repeat("x", 2049)))
	as[FeedbackLogV2TextTooLong](t, revert(t, err, fl.UnpackError))
	_, err = s.send(c, relayer, fl.PackSubmitFeedback(""))
	as[FeedbackLogV2EmptyText](t, revert(t, err, fl.UnpackError))

	// Range views clamp like v1's; recordAt past the end reverts.
	if got := mustCall(t, c, fl.PackRecordRange(u(0), u(10)), fl.UnpackRecordRange); len(got) != 2 {
		t.Errorf("recordRange(0, 10) has %d records, want 2", len(got))
	}
	if got := mustCall(t, c, fl.PackRecordRange(u(5), u(10)), fl.UnpackRecordRange); len(got) != 0 {
		t.Errorf("recordRange(5, 10) has %d records, want 0", len(got))
	}
	_, err = bind.Call(c, nil, fl.PackRecordAt(u(2)), fl.UnpackRecordAt)
	as[FeedbackLogV2IndexOutOfRange](t, revert(t, err, fl.UnpackError))
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// TestFeedbackLogGasV1V2 measures what one sponsored finding costs on each
// version, on today's rules, and holds v2 to at most half of v1 for a
// typical 300-byte finding under a fresh key:
//
//	go test ./chain/contracts -run GasV1V2 -v
func TestFeedbackLogGasV1V2(t *testing.T) {
	relayer, signer := newKey(t), newKey(t)
	s := mustSim(t, true, relayer, signer)
	signerAddr := crypto.PubkeyToAddress(signer.PublicKey)
	v1, v2 := NewFeedbackLog(), NewFeedbackLogV2()
	a1 := s.deploy(relayer, &FeedbackLogMetaData)
	a2 := s.deploy(relayer, &FeedbackLogV2MetaData)
	c1, c2 := v1.Instance(s.client, a1), v2.Instance(s.client, a2)
	// The first entry of each log also pays for its length slot going from
	// zero: post one first so the figures are for the steady state.
	s.mustSend(c1, relayer, v1.PackSubmitFeedback("warm"))
	s.mustSend(c2, relayer, v2.PackSubmitFeedback("warm"))
	deadline := u(s.headTime() + 3600)
	type row struct {
		bytes  int
		g1, g2 uint64
	}
	var rows []row
	for i, n := range []int{13, 300, 1000, 2048} {
		text := strings.Repeat("q", n)
		key := crypto.Keccak256Hash([]byte{byte(i), 'k'}) // a fresh key: a new finding
		_, sig1 := signFeedback(t, signer, typedFeedback(s.chainID, a1, signerAddr, text, key, u(0), deadline))
		_, sig2 := signFeedback(t, signer, typedFeedbackV2(s.chainID, a2, signerAddr, text, key, u(0), deadline))
		r1 := s.mustSend(c1, relayer, v1.PackSubmitFeedbackFor(signerAddr, text, key, u(0), deadline, sig1))
		r2 := s.mustSend(c2, relayer, v2.PackSubmitFeedbackFor(signerAddr, text, key, u(0), deadline, sig2))
		rows = append(rows, row{n, r1.GasUsed, r2.GasUsed})
		t.Logf("sponsored finding, fresh key, %4d bytes: v1 %7d gas, v2 %7d gas (%.2f×)", n, r1.GasUsed, r2.GasUsed, float64(r2.GasUsed)/float64(r1.GasUsed))
	}
	// Reading back costs nothing on chain, but eth_call gas bounds a page:
	// what a 100-record recordRange needs against 100 v1 entries.
	for i := 0; i < 100; i++ {
		s.mustSend(c2, relayer, v2.PackSubmitFeedback("qa/v1 x"))
	}
	est, err := s.client.EstimateGas(context.Background(), ethereum.CallMsg{To: &a2, Data: v2.PackRecordRange(u(0), u(100))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recordRange(0, 100) estimates %d gas", est)
	for _, r := range rows {
		if r.bytes == 300 && 2*r.g2 > r.g1 {
			t.Errorf("300-byte finding: v2 %d gas is more than half of v1's %d", r.g2, r.g1)
		}
		// A text that fits v1's entry slots costs the same on both (v2 keeps
		// two slots too, and emits the text); past that v2 is cheaper.
		if r.bytes >= 300 && r.g2 >= r.g1 || float64(r.g2) > 1.05*float64(r.g1) {
			t.Errorf("%d-byte finding: v2 %d gas, v1 %d", r.bytes, r.g2, r.g1)
		}
	}
}
