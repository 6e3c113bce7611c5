package poster

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
)

var ether = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// harness is a dev chain with fleetd's log, a funded sponsor and an
// unfunded fleet identity.
type harness struct {
	chainURL string
	client   *chain.Client
	log      *chain.FeedbackLog
	sponsor  *chain.Key
	fleetKey *chain.Key
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{}
	h.sponsor, _ = chain.GenerateKey()
	h.fleetKey, _ = chain.GenerateKey()
	ch, err := devchain.Start(context.Background(), devchain.Config{Funded: []devchain.Account{
		{Address: h.sponsor.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(1000))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	h.chainURL = ch.URL()
	h.client, err = chain.Dial(context.Background(), ch.URL(), chain.Options{ReceiptTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.client.Close)
	if h.log, _, err = h.client.DeployFeedbackLog(context.Background(), h.sponsor); err != nil {
		t.Fatal(err)
	}
	return h
}

// poster returns a poster for the fleet identity, sponsored, with its
// outbox in a fresh directory.
func (h *harness) poster(t testing.TB, cfg Config) *Poster {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = h.log
	}
	cfg.Identity, cfg.Sponsor = h.fleetKey, h.sponsor
	if cfg.OutboxDir == "" {
		cfg.OutboxDir = t.TempDir()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
