package webapp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Mode selects the flawed platform or its correct twin.
type Mode int

const (
	// Flawed plants every flaw in README.md.
	Flawed Mode = iota
	// Correct is the twin with every flaw fixed.
	Correct
)

func (m Mode) String() string {
	if m == Correct {
		return "correct"
	}
	return "flawed"
}

// Shops are the names Serve registers, with their metadata.
var Shops = []struct{ Name, Title, Tagline string }{
	{"acme", "Acme Anvils", "Anvils & <b>rockets</b> since 1949"},
	{"globex", "Globex Goods", "Everything, globally"},
}

// Config configures Serve.
type Config struct {
	RPC     string     // the chain's JSON-RPC URL; required
	ChainID uint64     // when non-zero, must be the node's chain id
	Sponsor *chain.Key // deploys the registry and registers the shops; required
	Mode    Mode
	// CallTimeout bounds a planted hang of the call endpoint (default 30 s):
	// the request is answered after it or when the client goes away.
	CallTimeout time.Duration
	Logger      *slog.Logger // nil discards
}

// App is a running platform.
type App struct {
	cfg   Config
	log   *slog.Logger
	chain *chain.Client
	reg   *chain.Registry
	srv   *httptest.Server
	host  string // 127.0.0.1:port

	ctx    context.Context // cancelled by Close: ends planted hangs
	cancel context.CancelFunc
	once   sync.Once
}

// Serve deploys a NameRegistry with the sponsor as its owner, registers
// Shops with their metadata, and serves the platform over HTTPS on
// 127.0.0.1 (a self-signed certificate: use Client). The caller must Close
// the App. On error nothing is left running.
func Serve(ctx context.Context, cfg Config) (*App, error) {
	if cfg.RPC == "" || cfg.Sponsor == nil {
		return nil, errors.New("webapp: RPC and Sponsor are required")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &App{cfg: cfg, log: cfg.Logger.With("component", "webapp", "mode", cfg.Mode.String())}
	c, err := chain.Dial(ctx, cfg.RPC, chain.Options{ChainID: cfg.ChainID, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("webapp: %w", err)
	}
	a.chain = c
	reg, _, err := c.DeployNameRegistry(ctx, cfg.Sponsor)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("webapp: %w", err)
	}
	a.reg = reg
	for _, s := range Shops {
		if _, err := reg.Register(ctx, cfg.Sponsor, s.Name); err != nil {
			c.Close()
			return nil, fmt.Errorf("webapp: register %s: %w", s.Name, err)
		}
		for k, v := range map[string]string{"title": s.Title, "tagline": s.Tagline} {
			if _, err := reg.SetMetadata(ctx, cfg.Sponsor, s.Name, chain.MetadataKey(k), []byte(v)); err != nil {
				c.Close()
				return nil, fmt.Errorf("webapp: set %s of %s: %w", k, s.Name, err)
			}
		}
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.srv = httptest.NewUnstartedServer(a.handler())
	a.srv.Config.ReadHeaderTimeout = 5 * time.Second
	a.srv.Config.ErrorLog = slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)
	a.srv.StartTLS()
	a.host = strings.TrimPrefix(a.srv.URL, "https://")
	a.log.Info("webapp serving", "url", a.srv.URL, "registry", reg.Address().String())
	return a, nil
}

// URL is the platform's base URL, https://127.0.0.1:PORT.
func (a *App) URL() string { return a.srv.URL }

// Client is an HTTP client that trusts the platform's certificate.
func (a *App) Client() *http.Client { return a.srv.Client() }

// TLSConfig is the client TLS configuration that trusts the platform.
func (a *App) TLSConfig() *tls.Config {
	return a.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
}

// Target describes the platform to the fleet.
func (a *App) Target() fleet.Target {
	names := make([]string, len(Shops))
	for i, s := range Shops {
		names[i] = s.Name
	}
	return fleet.Target{
		Registry:   a.reg.Address().String(),
		Faces:      a.srv.URL + "/view?shop={name}",
		Call:       a.srv.URL + "/api/v2/agents/call",
		Docs:       []string{a.srv.URL + "/llms.txt", a.srv.URL + "/docs/quickstart.md"},
		FetchAllow: []string{a.host},
		Names:      names,
	}
}

// Close stops the server (ending planted hangs) and the chain connection.
// It is safe to call more than once.
func (a *App) Close() error {
	a.once.Do(func() {
		a.cancel()
		a.srv.Close()
		a.chain.Close()
	})
	return nil
}
