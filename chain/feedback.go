package chain

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/chain/contracts"
	"github.com/qafleet/fleetd/fleet"
)

// MaxText is the longest entry the FeedbackLog accepts, in bytes.
const MaxText = 2048

// ErrEmptyText and ErrTextTooLong refuse feedback before anything is sent;
// the contract refuses the same texts with EmptyText and TextTooLong.
var (
	ErrEmptyText   = errors.New("feedback text is empty")
	ErrTextTooLong = errors.New("feedback text is too long")
	ErrNotUTF8     = errors.New("feedback text is not valid UTF-8")
)

// CheckText applies the contract's rules (and UTF-8, which the contract does
// not check but every reader assumes) without a round trip.
func CheckText(text string) error {
	switch {
	case len(text) == 0:
		return ErrEmptyText
	case len(text) > MaxText:
		return fmt.Errorf("%w: %d bytes, max %d", ErrTextTooLong, len(text), MaxText)
	case !utf8.ValidString(text):
		return ErrNotUTF8
	}
	return nil
}

// SignatureTTL is how long a sponsored submission's signature stays valid,
// counted from the latest block's timestamp (FACTS.md: dev-chain block time
// runs ahead of the wall clock, so the local clock would be wrong).
const SignatureTTL = 10 * time.Minute

// Entry is one record of the log.
type Entry struct {
	Index  uint64        `json:"index"`
	Sender fleet.Address `json:"sender"`
	Time   time.Time     `json:"time"`
	Text   string        `json:"text"`
}

// Submission is the outcome of appending one entry.
type Submission struct {
	Index  uint64        `json:"index"`
	Sender fleet.Address `json:"sender"`
	Receipt
}

// FeedbackLog is a deployed FeedbackLog contract.
type FeedbackLog struct {
	c       *Client
	addr    common.Address
	b       *contracts.FeedbackLog
	abi     *abi.ABI
	limits  ReadLimits
	ver     versionCache
	pageCap uint64 // tests: at most this many entries per v1 page (0: no cap)
}

var feedbackBinding = contracts.NewFeedbackLog()

// FeedbackLog returns a handle on the log at addr. It does not check that a
// contract is there; CheckCode does.
func (c *Client) FeedbackLog(addr fleet.Address) *FeedbackLog {
	a := feedbackBinding.GetABI()
	return &FeedbackLog{c: c, addr: common.Address(addr), b: feedbackBinding, abi: &a, limits: ReadLimits{}.withDefaults()}
}

// DeployFeedbackLog deploys a new, empty log paid for by key.
func (c *Client) DeployFeedbackLog(ctx context.Context, key *Key) (*FeedbackLog, *Receipt, error) {
	l := c.FeedbackLog(fleet.Address{})
	r, err := c.deploy(ctx, key, common.FromHex(contracts.FeedbackLogMetaData.Bin), l.abi)
	if err != nil {
		return nil, r, fmt.Errorf("feedback log: %w", err)
	}
	l.addr = common.Address(r.Contract)
	return l, r, nil
}

// Address returns the contract address.
func (l *FeedbackLog) Address() fleet.Address { return fleet.Address(l.addr) }

// ErrNoContract means there is no code at the configured address.
var ErrNoContract = errors.New("no contract at address")

// CheckCode verifies there is contract code at the log's address, so a wrong
// feedback_log setting fails with a clear error instead of empty reads.
func (l *FeedbackLog) CheckCode(ctx context.Context) error {
	ctx, cancel := l.c.reqCtx(ctx)
	defer cancel()
	code, err := l.c.eth.CodeAt(ctx, l.addr, nil)
	if err != nil {
		return fmt.Errorf("feedback log %s: %w", l.addr.Hex(), err)
	}
	if len(code) == 0 {
		return fmt.Errorf("feedback log %s: %w", l.Address(), ErrNoContract)
	}
	return nil
}

// ErrNotFeedbackLog means the contract at the configured address is not a
// FeedbackLog: its code lacks the log's functions, or they do not answer.
var ErrNotFeedbackLog = errors.New("not a FeedbackLog")

// CheckInterface verifies the contract at the log's address is a
// FeedbackLog of either version: it has code, the code's dispatcher holds
// the selector of every function of its version's interface (PUSH4
// selector, as solc emits), and feedbackCount() answers. It fails with
// ErrNoContract or a wrapped ErrNotFeedbackLog naming what is missing.
func (l *FeedbackLog) CheckInterface(ctx context.Context) error {
	rctx, cancel := l.c.reqCtx(ctx)
	code, err := l.c.eth.CodeAt(rctx, l.addr, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("feedback log %s: %w", l.addr.Hex(), err)
	}
	if len(code) == 0 {
		return fmt.Errorf("feedback log %s: %w", l.Address(), ErrNoContract)
	}
	v, err := l.Version(ctx)
	if err != nil {
		return fmt.Errorf("feedback log %s: %w", l.Address(), err)
	}
	if missing := checkSelectors(code, interfaceABI(v, l.abi)); len(missing) > 0 {
		return fmt.Errorf("feedback log %s: %w: its code has no %s", l.Address(), ErrNotFeedbackLog, strings.Join(missing, ", "))
	}
	if _, err := l.Count(ctx); err != nil {
		return fmt.Errorf("feedback log %s: %w: feedbackCount() fails: %w", l.Address(), ErrNotFeedbackLog, err)
	}
	return nil
}

// Submit appends text with from as both sender and payer.
func (l *FeedbackLog) Submit(ctx context.Context, from *Key, text string) (*Submission, error) {
	if err := CheckText(text); err != nil {
		return nil, fmt.Errorf("submit feedback: %w", err)
	}
	return l.submit(ctx, from, text)
}

// submit skips the local text check so tests can prove the contract refuses too.
func (l *FeedbackLog) submit(ctx context.Context, from *Key, text string) (*Submission, error) {
	r, err := l.c.send(ctx, sendRequest{key: from, to: &l.addr, data: l.b.PackSubmitFeedback(text), method: "submitFeedback", abi: l.abi})
	if err != nil {
		return nil, fmt.Errorf("submit feedback: %w", err)
	}
	return l.submission(r)
}

// SubmitFor appends text recorded as identity's entry: identity signs an
// EIP-712 message and sponsor relays it and pays the gas, so identity needs no
// funds. The entry goes under a fresh random key, so nothing is deduplicated
// and nothing races: any number of processes may sign for one identity at
// once (see SubmitKeyed for entries that must appear once).
func (l *FeedbackLog) SubmitFor(ctx context.Context, identity, sponsor *Key, text string) (*Submission, error) {
	if err := CheckText(text); err != nil {
		return nil, fmt.Errorf("submit sponsored feedback: %w", err)
	}
	if identity.addr == sponsor.addr {
		return l.Submit(ctx, sponsor, text) // same sender either way, and cheaper
	}
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("submit sponsored feedback: %w", err)
	}
	return l.submitKeyed(ctx, identity, sponsor, text, key, new(big.Int))
}

// ErrDuplicate is wrapped by SubmitKeyed when an entry under the key is
// already on the log: stamped within the window, or taken by another
// submission between reading the stamp and landing (StaleKey).
var ErrDuplicate = errors.New("an entry under this key is already on the log")

// Stamp is what the log records for an identity's key: how many signed
// entries went under it and the block time of the latest (zero: never).
type Stamp struct {
	Uses uint64
	Time time.Time
	raw  *big.Int
}

// Head is the number of the chain's newest block.
func (l *FeedbackLog) Head(ctx context.Context) (uint64, error) {
	n, _, _, err := l.c.Head(ctx)
	return n, err
}

// KeyStamp returns the stamp of sender's key.
func (l *FeedbackLog) KeyStamp(ctx context.Context, sender fleet.Address, key [32]byte) (Stamp, error) {
	out, err := l.c.call(ctx, l.addr, l.b.PackKeyStamp(common.Address(sender), key), nil, l.abi)
	if err != nil {
		return Stamp{}, fmt.Errorf("key stamp of %s: %w", sender, err)
	}
	raw, err := l.b.UnpackKeyStamp(out)
	if err != nil {
		return Stamp{}, fmt.Errorf("key stamp of %s: %w", sender, err)
	}
	st := Stamp{raw: raw}
	if raw.Sign() != 0 {
		st.Uses = new(big.Int).Rsh(raw, 64).Uint64()
		low := new(big.Int).And(raw, new(big.Int).SetUint64(1<<64-1)) // the low 64 bits: a block timestamp
		st.Time = time.Unix(int64(low.Uint64()), 0).UTC()
	}
	return st, nil
}

// FingerprintKey is the log key a finding with fingerprint fp goes under:
// every fleetd process derives the same key, so the log itself decides which
// of two processes posting one finding succeeds.
func FingerprintKey(fp string) [32]byte {
	return crypto.Keccak256Hash([]byte("fleetd/finding/" + fp))
}

// SubmitKeyed appends text as identity's entry under key, relayed and paid
// for by sponsor (which may be identity itself), unless an entry under key
// was stamped less than window ago by chain time, or another submission takes
// the key first: both fail with a *DuplicateError wrapping ErrDuplicate. The
// check and the append are one compare-and-swap in the contract, so two
// processes racing with the same key never both append.
func (l *FeedbackLog) SubmitKeyed(ctx context.Context, identity, sponsor *Key, text string, key [32]byte, window time.Duration) (*Submission, error) {
	if err := CheckText(text); err != nil {
		return nil, fmt.Errorf("submit keyed feedback: %w", err)
	}
	st, err := l.KeyStamp(ctx, identity.Address(), key)
	if err != nil {
		return nil, fmt.Errorf("submit keyed feedback: %w", err)
	}
	if st.Uses > 0 {
		_, _, now, err := l.c.Head(ctx)
		if err != nil {
			return nil, fmt.Errorf("submit keyed feedback: %w", err)
		}
		if now.Sub(st.Time) < window {
			return nil, &DuplicateError{Key: key, Stamp: st}
		}
	}
	sub, err := l.submitKeyed(ctx, identity, sponsor, text, key, st.raw)
	if IsRevert(err, "") {
		// StaleKey, when the estimate already saw the other submission. When
		// both landed in one block, the failed one replays cleanly at the
		// parent block and its reason is lost: the moved stamp says it.
		now, serr := l.KeyStamp(ctx, identity.Address(), key)
		if IsRevert(err, "StaleKey") || (serr == nil && now.raw.Cmp(st.raw) != 0) {
			return nil, &DuplicateError{Key: key, Stamp: now, Raced: true}
		}
	}
	return sub, err
}

// DuplicateError says which key was taken and when.
type DuplicateError struct {
	Key   [32]byte
	Stamp Stamp
	Raced bool // another submission took the key while this one was in flight
}

func (e *DuplicateError) Error() string {
	how := "within the window"
	if e.Raced {
		how = "by a concurrent submission"
	}
	return fmt.Sprintf("key %x…: %v (stamped %s, %s)", e.Key[:4], ErrDuplicate, e.Stamp.Time.Format(time.RFC3339), how)
}

func (e *DuplicateError) Unwrap() error { return ErrDuplicate }

// submitKeyed signs Feedback(sender, text, key, prev, deadline) and relays it.
func (l *FeedbackLog) submitKeyed(ctx context.Context, identity, sponsor *Key, text string, key [32]byte, prev *big.Int) (*Submission, error) {
	if prev == nil {
		prev = new(big.Int)
	}
	deadline, err := l.deadline(ctx)
	if err != nil {
		return nil, fmt.Errorf("submit sponsored feedback: %w", err)
	}
	v, err := l.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("submit sponsored feedback: %w", err)
	}
	chainID, err := l.c.id(ctx)
	if err != nil {
		return nil, err
	}
	sig, err := l.sign(chainID, identity, v, text, key, prev, deadline)
	if err != nil {
		return nil, err
	}
	return l.relay(ctx, identity.addr, sponsor, text, key, prev, deadline, sig)
}

// sign is identity's EIP-712 signature over the entry, in the domain of
// log version v.
func (l *FeedbackLog) sign(chainID *big.Int, identity *Key, v int, text string, key [32]byte, prev, deadline *big.Int) ([]byte, error) {
	digest := FeedbackDigestV(v, chainID, l.addr, identity.addr, text, key, prev, deadline)
	sig, err := crypto.Sign(digest[:], identity.priv)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	sig[64] += 27
	return sig, nil
}

func (l *FeedbackLog) relay(ctx context.Context, sender common.Address, sponsor *Key, text string, key [32]byte, prev, deadline *big.Int, sig []byte) (*Submission, error) {
	data := l.b.PackSubmitFeedbackFor(sender, text, key, prev, deadline, sig)
	r, err := l.c.send(ctx, sendRequest{key: sponsor, to: &l.addr, data: data, method: "submitFeedbackFor", abi: l.abi})
	if err != nil {
		return nil, fmt.Errorf("submit sponsored feedback: %w", err)
	}
	return l.submission(r)
}

// deadline is the latest block's time plus SignatureTTL.
func (l *FeedbackLog) deadline(ctx context.Context) (*big.Int, error) {
	_, _, t, err := l.c.Head(ctx)
	if err != nil {
		return nil, err
	}
	return big.NewInt(t.Add(SignatureTTL).Unix()), nil
}

var (
	domainTypeHash   = crypto.Keccak256Hash([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	feedbackTypeHash = crypto.Keccak256Hash([]byte("Feedback(address sender,string text,bytes32 key,uint256 prev,uint256 deadline)"))
	nameHash         = crypto.Keccak256Hash([]byte("FeedbackLog"))
	versionHash      = crypto.Keccak256Hash([]byte("1"))
)

// FeedbackDigest is the EIP-712 digest a sender signs for submitFeedbackFor
// on a version-1 log: keccak256(0x1901 ‖ domainSeparator ‖
// hashStruct(Feedback)). FeedbackDigestV covers both versions.
func FeedbackDigest(chainID *big.Int, contract, sender common.Address, text string, key [32]byte, prev, deadline *big.Int) common.Hash {
	return feedbackDigest(versionHash, chainID, contract, sender, text, key, prev, deadline)
}

func feedbackDigest(versionHash common.Hash, chainID *big.Int, contract, sender common.Address, text string, key [32]byte, prev, deadline *big.Int) common.Hash {
	domain := crypto.Keccak256(domainTypeHash[:], nameHash[:], versionHash[:], math.U256Bytes(new(big.Int).Set(chainID)), common.LeftPadBytes(contract[:], 32))
	textHash := crypto.Keccak256([]byte(text))
	structHash := crypto.Keccak256(feedbackTypeHash[:], common.LeftPadBytes(sender[:], 32), textHash, key[:], math.U256Bytes(new(big.Int).Set(prev)), math.U256Bytes(new(big.Int).Set(deadline)))
	return crypto.Keccak256Hash([]byte{0x19, 0x01}, domain, structHash)
}

// submission reads the entry id from the FeedbackSubmitted event.
func (l *FeedbackLog) submission(r *Receipt) (*Submission, error) {
	for _, lg := range r.logs {
		if lg.Address != l.addr {
			continue
		}
		ev, err := l.b.UnpackFeedbackSubmittedEvent(lg)
		if err != nil {
			continue
		}
		return &Submission{Index: ev.Id.Uint64(), Sender: fleet.Address(ev.Sender), Receipt: *r}, nil
	}
	return nil, fmt.Errorf("tx %s: no FeedbackSubmitted event in receipt", r.Tx)
}

// Count returns the number of entries.
func (l *FeedbackLog) Count(ctx context.Context) (uint64, error) {
	return l.countAt(ctx, nil)
}

func (l *FeedbackLog) countAt(ctx context.Context, block *big.Int) (uint64, error) {
	out, err := l.c.call(ctx, l.addr, l.b.PackFeedbackCount(), block, l.abi)
	if err != nil {
		return 0, fmt.Errorf("feedback count: %w", err)
	}
	n, err := l.b.UnpackFeedbackCount(out)
	if err != nil {
		return 0, fmt.Errorf("feedback count: %w", err)
	}
	return n.Uint64(), nil
}

// At returns entry i; past the end it returns a *RevertError named IndexOutOfRange.
func (l *FeedbackLog) At(ctx context.Context, i uint64) (Entry, error) {
	if v, err := l.Version(ctx); err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	} else if v >= 2 {
		return l.atV2(ctx, i)
	}
	out, err := l.c.call(ctx, l.addr, l.b.PackFeedbackAt(new(big.Int).SetUint64(i)), nil, l.abi)
	if err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	}
	e, err := l.b.UnpackFeedbackAt(out)
	if err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	}
	return entry(i, e), nil
}

func entry(i uint64, e contracts.FeedbackLogEntry) Entry {
	return Entry{Index: i, Sender: fleet.Address(e.Sender), Time: time.Unix(int64(e.Timestamp), 0).UTC(), Text: e.Text}
}

// Range returns up to count entries from start (clamped by the contract;
// at most 1,000 from a version-2 log).
func (l *FeedbackLog) Range(ctx context.Context, start, count uint64) ([]Entry, error) {
	if v, err := l.Version(ctx); err != nil {
		return nil, fmt.Errorf("feedback range %d+%d: %w", start, count, err)
	} else if v >= 2 {
		return l.rangeV2(ctx, start, count)
	}
	return l.rangeAt(ctx, start, count, nil)
}

func (l *FeedbackLog) rangeAt(ctx context.Context, start, count uint64, block *big.Int) ([]Entry, error) {
	data := l.b.PackFeedbackRange(new(big.Int).SetUint64(start), new(big.Int).SetUint64(count))
	out, err := l.c.call(ctx, l.addr, data, block, l.abi)
	if err != nil {
		return nil, fmt.Errorf("feedback range %d+%d: %w", start, count, err)
	}
	raw, err := l.b.UnpackFeedbackRange(out)
	if err != nil {
		return nil, fmt.Errorf("feedback range %d+%d: %w", start, count, err)
	}
	es := make([]Entry, len(raw))
	for k, e := range raw {
		es[k] = entry(start+uint64(k), e)
	}
	return es, nil
}

// Page sizing for Scan. FACTS.md: eth_call's default gas cap is 50M and 100
// maximum-size entries cost ~15M, so the cost of a page grows with its texts.
// Scan budgets callGasBudget per call using an estimate per entry from the
// longest text seen so far, and halves a page that still fails.
const (
	callGasBudget  = 20_000_000
	firstPage      = 50
	maxPage        = 2000
	gasPerEntry    = 12_000 // fixed cost: array slot, struct, ABI encoding
	gasPerTextWord = 2_200  // a cold SLOAD per 32-byte word
)

func pageFor(maxText int) uint64 {
	cost := uint64(gasPerEntry + gasPerTextWord*((maxText+31)/32+1))
	return max(1, min(maxPage, callGasBudget/cost))
}

// ScanResult says where a scan stopped and which block it read.
type ScanResult struct {
	Next      uint64   // index after the last entry read (== count at Block)
	Block     uint64   // the block every page was read at
	BlockHash [32]byte // its hash, for detecting a reorg on the next scan
}
