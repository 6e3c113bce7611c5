package chain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/fleet"
)

// Tx describes a transaction the chain layer is about to sign and send. The
// guard and its hooks see every one of them before it leaves the process.
type Tx struct {
	From         fleet.Address
	To           *fleet.Address // nil for a contract creation
	Data         []byte
	Value        *big.Int
	Gas          uint64
	MaxFeePerGas *big.Int
	// Method is the ABI method name when the caller knows it (the bindings
	// do); raw calls leave it empty and are judged by selector alone.
	Method string
}

// Selector returns the first four bytes of the calldata, or false if there are none.
func (t Tx) Selector() ([4]byte, bool) {
	var s [4]byte
	if len(t.Data) < 4 {
		return s, false
	}
	copy(s[:], t.Data)
	return s, true
}

// WriteHook may refuse a transaction by returning an error. The dial and the
// budgets plug in here; a hook must be cheap and must not send transactions.
type WriteHook func(ctx context.Context, tx Tx) error

// ErrRefused is wrapped by every refusal of the write guard.
var ErrRefused = errors.New("refused by write guard")

// RefusedError says which rule refused a transaction.
type RefusedError struct {
	Rule   string // "deny-list", "gas-price" or "hook"
	Reason string
	Err    error // the hook's error, if a hook refused
}

func (e *RefusedError) Error() string { return "refused (" + e.Rule + "): " + e.Reason }

// Unwrap makes errors.Is(err, ErrRefused) true, and exposes a hook's own error.
func (e *RefusedError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrRefused, e.Err}
	}
	return []error{ErrRefused}
}

// DefaultDenyFunctions is the admin deny-list of DESIGN.md §3: name patterns
// (matched case-insensitively against the method name when known) and full
// signatures (matched by selector on every transaction, raw ones included).
var DefaultDenyFunctions = []string{
	"adminBurn*", "adminResetAll", "diamondCut", "transferOwnership", "upgrade*",
	"adminBurn(string[])", "adminBurnNames(string[])", "adminResetAll()",
	"diamondCut((address,uint8,bytes4[])[],address,bytes)",
	"transferOwnership(address)", "renounceOwnership()",
	"upgradeTo(address)", "upgradeToAndCall(address,bytes)",
}

// GuardConfig configures NewGuard.
type GuardConfig struct {
	// DenyFunctions adds to DefaultDenyFunctions: "name", "prefix*" or a full
	// signature like "adminBurn(string[])".
	DenyFunctions []string
	// MaxFeePerGas caps the fee a transaction may offer; nil means no cap.
	MaxFeePerGas *big.Int
	Hooks        []WriteHook
}

// Guard is the single write guard every transaction passes.
type Guard struct {
	selectors map[[4]byte]string
	names     []string // lowercased; a trailing '*' is a prefix match
	maxFee    *big.Int
	hooks     []WriteHook
}

var signatureRE = regexp.MustCompile(`^([A-Za-z_$][A-Za-z0-9_$]*)\((.*)\)$`)

// NewGuard builds a guard from cfg. It errors on a deny entry it cannot parse.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	g := &Guard{selectors: map[[4]byte]string{}, maxFee: cfg.MaxFeePerGas, hooks: cfg.Hooks}
	for _, entry := range append(append([]string{}, DefaultDenyFunctions...), cfg.DenyFunctions...) {
		if err := g.deny(entry); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// deny adds one entry: a signature denies its selector and its name.
func (g *Guard) deny(entry string) error {
	entry = strings.TrimSpace(entry)
	if m := signatureRE.FindStringSubmatch(entry); m != nil {
		sig := m[1] + "(" + strings.ReplaceAll(m[2], " ", "") + ")"
		var sel [4]byte
		copy(sel[:], crypto.Keccak256([]byte(sig))[:4])
		g.selectors[sel] = sig
		g.names = append(g.names, strings.ToLower(m[1]))
		return nil
	}
	if entry == "" || strings.ContainsAny(strings.TrimSuffix(entry, "*"), "*() ,") {
		return fmt.Errorf("deny-list entry %q: want a name, a name prefix ending in *, or a signature", entry)
	}
	g.names = append(g.names, strings.ToLower(entry))
	return nil
}

// AddHook appends a hook; later issues register the dial and budget here.
func (g *Guard) AddHook(h WriteHook) { g.hooks = append(g.hooks, h) }

// Check returns nil if tx may be sent, else an error wrapping ErrRefused.
func (g *Guard) Check(ctx context.Context, tx Tx) error {
	if sel, ok := tx.Selector(); ok && tx.To != nil {
		if sig, denied := g.selectors[sel]; denied {
			return &RefusedError{Rule: "deny-list", Reason: fmt.Sprintf("selector 0x%x is %s, an admin function", sel, sig)}
		}
	}
	if tx.Method != "" && g.deniedName(tx.Method) {
		return &RefusedError{Rule: "deny-list", Reason: fmt.Sprintf("method %s is on the admin deny-list", tx.Method)}
	}
	if g.maxFee != nil && tx.MaxFeePerGas != nil && tx.MaxFeePerGas.Cmp(g.maxFee) > 0 {
		return &RefusedError{Rule: "gas-price", Reason: fmt.Sprintf("max fee %s wei/gas exceeds the cap %s", tx.MaxFeePerGas, g.maxFee)}
	}
	for _, h := range g.hooks {
		if err := h(ctx, tx); err != nil {
			var re *RefusedError
			if errors.As(err, &re) {
				return err
			}
			return &RefusedError{Rule: "hook", Reason: err.Error(), Err: err}
		}
	}
	return nil
}

func (g *Guard) deniedName(method string) bool {
	m := strings.ToLower(method)
	for _, n := range g.names {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(m, p) {
				return true
			}
		} else if m == n {
			return true
		}
	}
	return false
}
