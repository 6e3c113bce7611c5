package chain

import (
	"context"
	"errors"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/fleet"
)

func selector(sig string) []byte { return crypto.Keccak256([]byte(sig))[:4] }

func TestGuard(t *testing.T) {
	errDial := errors.New("dial is observe")
	g, err := NewGuard(GuardConfig{
		DenyFunctions: []string{"nukeEverything(uint256)", "drain*"},
		MaxFeePerGas:  big.NewInt(100),
		Hooks: []WriteHook{func(_ context.Context, tx Tx) error {
			if tx.Method == "needsExercise" {
				return errDial
			}
			return nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	to := fleet.Address{1}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tx   Tx
		rule string // "" = allowed
	}{
		{"plain transfer", Tx{To: &to, Value: big.NewInt(1)}, ""},
		{"deploy", Tx{Data: selector("adminResetAll()")}, ""}, // creation code, no target
		{"feedback", Tx{To: &to, Data: selector("submitFeedback(string)"), Method: "submitFeedback"}, ""},
		{"adminResetAll raw", Tx{To: &to, Data: selector("adminResetAll()")}, "deny-list"},
		{"adminBurn raw", Tx{To: &to, Data: append(selector("adminBurn(string[])"), 0, 0)}, "deny-list"},
		{"diamondCut raw", Tx{To: &to, Data: selector("diamondCut((address,uint8,bytes4[])[],address,bytes)")}, "deny-list"},
		{"transferOwnership raw", Tx{To: &to, Data: selector("transferOwnership(address)")}, "deny-list"},
		{"upgradeToAndCall raw", Tx{To: &to, Data: selector("upgradeToAndCall(address,bytes)")}, "deny-list"},
		{"configured signature", Tx{To: &to, Data: selector("nukeEverything(uint256)")}, "deny-list"},
		{"name pattern adminBurnNames", Tx{To: &to, Data: []byte{9, 9, 9, 9}, Method: "adminBurnNames"}, "deny-list"},
		{"name pattern case", Tx{To: &to, Data: []byte{9, 9, 9, 9}, Method: "UpgradeBeacon"}, "deny-list"},
		{"configured prefix", Tx{To: &to, Data: []byte{9, 9, 9, 9}, Method: "drainPool"}, "deny-list"},
		{"fee over cap", Tx{To: &to, MaxFeePerGas: big.NewInt(101)}, "gas-price"},
		{"fee at cap", Tx{To: &to, MaxFeePerGas: big.NewInt(100)}, ""},
		{"hook", Tx{To: &to, Method: "needsExercise"}, "hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := g.Check(ctx, tc.tx)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *RefusedError
			if !errors.Is(err, ErrRefused) || !errors.As(err, &re) || re.Rule != tc.rule {
				t.Fatalf("got %v, want refusal by %s", err, tc.rule)
			}
			if tc.rule == "hook" && !errors.Is(err, errDial) {
				t.Errorf("hook refusal %v does not wrap the hook's error", err)
			}
		})
	}
	for _, bad := range []string{"", "a*b", "foo(", "two words"} {
		if _, err := NewGuard(GuardConfig{DenyFunctions: []string{bad}}); err == nil {
			t.Errorf("deny entry %q accepted", bad)
		}
	}
}
