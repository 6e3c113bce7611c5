package doctor

import (
	"context"
	"fmt"
	"math/big"

	"github.com/qafleet/fleetd/chain"
)

// Findings a day the sponsor should be able to pay for on top of the wei
// budget, at ~150k gas each (a sponsored submitFeedbackFor with its text).
const (
	SponsorFindingsPerDay = 200
	GasPerFinding         = 150_000
)

// SponsorFunds checks the sponsor can pay for a day: budget wei (the
// fleet's daily budget, or one run's when no daily limit is set; what
// names which) plus the gas of a day's findings at today's gas price. An
// empty sponsor is fatal: nothing could be posted.
func SponsorFunds(ctx context.Context, cl *chain.Client, sponsor *chain.Key, budget uint64, what string) Check {
	c := Check{Name: "sponsor funds"}
	bal, err := cl.Balance(ctx, sponsor.Address())
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	price, err := cl.GasPrice(ctx)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	gas := new(big.Int).Mul(price, big.NewInt(SponsorFindingsPerDay*GasPerFinding))
	need := new(big.Int).Add(new(big.Int).SetUint64(budget), gas)
	c.Detail = fmt.Sprintf("%s holds %s; a day needs %s (%s %s + %d findings at %s gwei)",
		sponsor.Address(), ether(bal), ether(need), what, ether(new(big.Int).SetUint64(budget)), SponsorFindingsPerDay, gwei(price))
	switch {
	case bal.Sign() == 0:
		c.Fatal = true
		c.Fix = "fund " + sponsor.Address().String() + ": it pays for every finding and funds the runs' throwaway keys"
	case bal.Cmp(need) < 0:
		c.Fix = "send the sponsor at least " + ether(new(big.Int).Sub(need, bal)) + " more, or lower the budgets"
	default:
		c.OK = true
	}
	return c
}

// ether formats wei as ETH, six significant digits.
func ether(wei *big.Int) string {
	f, _ := new(big.Float).Quo(new(big.Float).SetInt(wei), big.NewFloat(1e18)).Float64()
	return fmt.Sprintf("%.6g ETH", f)
}

func gwei(wei *big.Int) string {
	f, _ := new(big.Float).Quo(new(big.Float).SetInt(wei), big.NewFloat(1e9)).Float64()
	return fmt.Sprintf("%.3g", f)
}
