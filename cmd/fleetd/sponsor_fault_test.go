package main

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestDaemonSponsorRunsDry: the daemon's sponsor is drained on the dev chain
// while it runs. Its findings are queued (acknowledged), posting is paused and
// says so in /api/status ("posting") and /metrics (fleetd_posting_paused 1)
// and once in the log; when the sponsor is funded again the daemon posts the
// outbox within seconds, on its own, and each finding is on the log exactly
// once.
func TestDaemonSponsorRunsDry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon against the dev chain and the testbed")
	}
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{
		"smoke": {Every: 2 * time.Second}, "ux": {Every: 3 * time.Second}, "security": {Every: 3 * time.Second},
	})
	ctx := context.Background()
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := startTestDaemon(t, dctx, f.config)
	base, done, errb := d.base, d.done, d.errb
	// Mid-run: the daemon refuses to start with a dry sponsor (its
	// preflight), so the sponsor is drained under it.
	bystander, _ := chain.GenerateKey()
	if _, moved, err := f.dn.Client.SweepAll(ctx, f.dn.Sponsor, bystander.Address()); err != nil || moved.Sign() == 0 {
		t.Fatalf("drain the sponsor: %v", err)
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var st struct {
		Outbox  int
		Posting struct {
			Paused  bool
			Sponsor string
			Error   string
		}
	}
	waitFor(t, 90*time.Second, "a finding queued with posting paused", func() bool {
		json.Unmarshal([]byte(get("/api/status")), &st)
		return st.Posting.Paused && st.Outbox > 0
	})
	if !strings.EqualFold(st.Posting.Sponsor, f.dn.Sponsor.Address().String()) || !strings.Contains(st.Posting.Error, "insufficient funds") {
		t.Errorf("/api/status posting: %+v", st.Posting)
	}
	waitFor(t, 10*time.Second, "fleetd_posting_paused 1", func() bool { return strings.Contains(get("/metrics"), "fleetd_posting_paused 1") })
	queued := st.Outbox
	if _, err := f.dn.Client.Transfer(ctx, bystander, f.dn.Sponsor.Address(), new(big.Int).Mul(big.NewInt(100), big.NewInt(1e18))); err != nil {
		t.Fatalf("refund the sponsor: %v", err)
	}
	start := time.Now()
	waitFor(t, 60*time.Second, "the outbox posted after the sponsor was funded", func() bool {
		json.Unmarshal([]byte(get("/api/status")), &st)
		return !st.Posting.Paused && st.Outbox == 0
	})
	t.Logf("%d queued findings posted %s after the sponsor was funded", queued, time.Since(start).Round(100*time.Millisecond))
	waitFor(t, 10*time.Second, "fleetd_posting_paused 0", func() bool { return strings.Contains(get("/metrics"), "fleetd_posting_paused 0") })
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("fleetd run exited %d:\n%s", code, tail(errb.String(), 20))
	}
	logs := errb.String()
	if n := strings.Count(logs, `"msg":"posting paused: the sponsor cannot pay`); n != 1 {
		t.Errorf("the pause logged %d times, want once:\n%s", n, grepLines(logs, "posting"))
	}
	if n := strings.Count(logs, `"msg":"posting resumed`); n != 1 {
		t.Errorf("the resumption logged %d times, want once:\n%s", n, grepLines(logs, "posting"))
	}
	if _, findings := f.checkInvariants(t); findings < queued {
		t.Errorf("%d findings on the log, want at least the %d queued", findings, queued)
	}
}
