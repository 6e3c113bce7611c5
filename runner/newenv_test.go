package runner

import (
	"context"
	"log/slog"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// deadNode returns the URL of a loopback port nothing listens on: a node
// that is down, which a Lazy dial accepts.
func deadNode(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func envConfig(t *testing.T) EnvConfig {
	dir := t.TempDir()
	return EnvConfig{
		Target:  fleet.Target{FetchAllow: []string{"127.0.0.1:8080"}},
		Control: fleet.NewControl(dir),
		RPC:     deadNode(t), Lazy: true,
		FuzzDir: filepath.Join(dir, "fuzz"), OutboxDir: filepath.Join(dir, "outbox"), ReporterState: filepath.Join(dir, "reporter", "state.json"),
		Logger: slog.New(slog.DiscardHandler),
	}
}

// TestNewEnvRefusesWhatCannotBeWired: every refusal names the config key
// at fault, and none leaves a client open.
func TestNewEnvRefusesWhatCannotBeWired(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*EnvConfig)
		want string
	}{
		{"no rpc", func(c *EnvConfig) { c.RPC = "" }, "chain.rpc"},
		{"bad deny entry", func(c *EnvConfig) { c.DenyFunctions = []string{"a b"} }, "chain.deny_functions or target.admin_functions"},
		{"bad admin function", func(c *EnvConfig) { c.Target.AdminFunctions = []string{"x(,"} }, "chain.deny_functions or target.admin_functions"},
		{"bad fetch allowlist", func(c *EnvConfig) { c.Target.FetchAllow = []string{"no port here"} }, "target.fetch_allow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := envConfig(t)
			tc.edit(&c)
			env, err := NewEnv(context.Background(), c)
			if err == nil || env != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewEnv: %v, %v; want an error naming %s", env, err, tc.want)
			}
		})
	}
}

// TestNewEnvWiresTheTools: with a node down (Lazy) the env is built: the
// log at the configured address, one pacer, the allowlisted fetcher, the
// admin functions on the write guard's deny-list beside the operator's
// (without changing the config's slice), and with a fleet key the poster,
// which is qa_report's reporter; without one, no poster.
func TestNewEnvWiresTheTools(t *testing.T) {
	key, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := envConfig(t)
	c.FeedbackLog = fleet.Address{1}
	deny := make([]string, 1, 4)
	deny[0] = "drain"
	c.DenyFunctions = deny
	c.Target.AdminFunctions = []string{"setOwner"}
	c.FleetKey = key
	env, err := NewEnv(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.Log == nil || env.Pacer == nil || env.Fetcher == nil || env.Control != c.Control || env.Client == nil {
		t.Fatalf("env not wired: log %v, pacer %v, fetcher %v, control %v, client %v", env.Log, env.Pacer, env.Fetcher, env.Control, env.Client)
	}
	if env.Poster == nil || env.Reporter != env.Poster {
		t.Fatalf("with a fleet key: poster %v, reporter %v; want the poster as the reporter", env.Poster, env.Reporter)
	}
	if got := deny[:cap(deny)][1]; got != "" {
		t.Fatalf("the config's deny_functions backing array was written: %q", got)
	}

	c = envConfig(t)
	plain, err := NewEnv(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Poster != nil || plain.Reporter != nil || plain.Log != nil {
		t.Fatalf("without a fleet key or log: poster %v, reporter %v, log %v; want none", plain.Poster, plain.Reporter, plain.Log)
	}
}

// TestNewGuardDeniesAndCaps: the guard every node connection carries
// refuses the deny-list's methods (beside chain's defaults) and a fee over
// the cap, in gwei; with no cap any fee passes; a deny entry that does not
// parse is refused.
func TestNewGuardDeniesAndCaps(t *testing.T) {
	to := fleet.Address{2}
	g, err := NewGuard([]string{"drain*"}, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gwei := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e8)) } // tenths of a gwei
	for _, tc := range []struct {
		tx   chain.Tx
		deny bool
	}{
		{chain.Tx{To: &to, Method: "drainAll", MaxFeePerGas: gwei(10)}, true},
		{chain.Tx{To: &to, Method: "transferOwnership", MaxFeePerGas: gwei(10)}, true},
		{chain.Tx{To: &to, Method: "mint", MaxFeePerGas: gwei(15)}, false},
		{chain.Tx{To: &to, Method: "mint", MaxFeePerGas: gwei(16)}, true},
	} {
		if err := g.Check(ctx, tc.tx); (err != nil) != tc.deny {
			t.Errorf("%s at %s wei: %v; want refused=%v", tc.tx.Method, tc.tx.MaxFeePerGas, err, tc.deny)
		}
	}
	uncapped, err := NewGuard(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := uncapped.Check(ctx, chain.Tx{To: &to, Method: "mint", MaxFeePerGas: gwei(1e6)}); err != nil {
		t.Errorf("no cap: %v", err)
	}
	if _, err := NewGuard([]string{"a b"}, 0); err == nil {
		t.Error("a deny entry that does not parse was accepted")
	}
}
