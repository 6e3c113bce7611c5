package testbed

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Public names Serve registers, probed read-only by the fleet.
const (
	Alice = "alice" // registered by the sponsor (the registry owner)
	Bob   = "bob"   // registered by a user key Serve creates and funds
)

// SLO is the latency objective the testbed advertises in its target section.
const SLO = 500 * time.Millisecond

// AdminFunctions are the registry's admin functions, which must revert for
// anyone but the registry owner.
var AdminFunctions = []string{"adminBurn(string[])", "adminResetAll()"}

// DefaultFacesDir is where the face handler looks for a static face of a
// name that is not on chain.
const DefaultFacesDir = "/srv/testbed/faces"

// userFunds is what the sponsor gives the user key that registers Bob.
var userFunds = new(big.Int).Mul(big.NewInt(10), big.NewInt(1e15)) // 0.01 ether

// closeTimeout bounds the graceful part of Close.
const closeTimeout = 4 * time.Second

//go:embed compiler/corpus/*.tl
var corpusFS embed.FS

// Config configures Serve.
type Config struct {
	// RPC is the chain's JSON-RPC URL. Required.
	RPC string
	// ChainID, when non-zero, must be the node's chain id.
	ChainID uint64
	// Sponsor deploys the registry, owns it and registers Alice. When nil,
	// the key is read from SponsorKeyFile.
	Sponsor        *chain.Key
	SponsorKeyFile string
	// Addr is the HTTP listen address; empty means 127.0.0.1:0 (any free
	// port). The host must be a loopback address.
	Addr string
	// Compiler is the argv the target section gives for the compiler, with
	// "{src}" standing for the source file, e.g. the fleetd binary followed
	// by "testbed", "compile", "{src}". Empty leaves the key out.
	Compiler []string
	// CorpusDir receives the compiler's known-good sources (the target's
	// corpus). Empty means a temporary directory that Close removes.
	CorpusDir string
	// FacesDir is where static faces of names not on chain are looked up;
	// empty means DefaultFacesDir.
	FacesDir string
	// Logger receives one line per startup step and per failed request; nil
	// discards.
	Logger *slog.Logger
}

// TargetConfig is the `target:` section of fleetd's config that describes a
// platform to the fleet. Field names and tags are that section's keys.
type TargetConfig struct {
	Registry       string    `yaml:"registry" json:"registry"`
	Faces          string    `yaml:"faces" json:"faces"`
	Call           string    `yaml:"call" json:"call"`
	Docs           []string  `yaml:"docs" json:"docs"`
	Compiler       []string  `yaml:"compiler,omitempty" json:"compiler,omitempty"`
	FetchAllow     []string  `yaml:"fetch_allow" json:"fetch_allow"`
	AdminFunctions []string  `yaml:"admin_functions" json:"admin_functions"`
	Names          []string  `yaml:"names" json:"names"`
	Corpus         string    `yaml:"corpus,omitempty" json:"corpus,omitempty"`
	SLO            TargetSLO `yaml:"slo" json:"slo"`
}

// TargetSLO is the latency objective of a target.
type TargetSLO struct {
	P95MS int `yaml:"p95_ms" json:"p95_ms"`
}

// Testbed is a running testbed: a deployed registry and an HTTP server.
type Testbed struct {
	cfg   Config
	log   *slog.Logger
	chain *chain.Client
	reg   *registry
	owner common.Address

	leakedKey  string // hex private key of a fresh, unfunded key served on /.env
	adminToken string // revealed to a spoofed admin caller

	corpusDir    string
	removeCorpus bool

	url  string
	host string // host:port
	srv  *http.Server
	done chan struct{} // closed when the server goroutine returns

	ctx    context.Context // cancelled by Close: ends planted sleeps
	cancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// Serve deploys a FlawedRegistry to cfg.RPC with the sponsor as owner,
// registers Alice (sponsor) and Bob (a fresh user key the sponsor funds with
// 0.01 ether) with their metadata, writes the compiler corpus, and starts the
// HTTP server. It returns once the server accepts connections. On error,
// everything started is stopped. The caller must Close the Testbed.
func Serve(ctx context.Context, cfg Config) (*Testbed, error) {
	if cfg.RPC == "" {
		return nil, errors.New("testbed: no RPC URL")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	if cfg.FacesDir == "" {
		cfg.FacesDir = DefaultFacesDir
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sponsor := cfg.Sponsor
	if sponsor == nil {
		if cfg.SponsorKeyFile == "" {
			return nil, errors.New("testbed: no sponsor key")
		}
		var err error
		if sponsor, err = chain.LoadKey(cfg.SponsorKeyFile); err != nil {
			return nil, fmt.Errorf("testbed: sponsor key: %w", err)
		}
	}
	// Listen first: a busy port should fail before anything is deployed.
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("testbed: listen: %w", err)
	}
	t := &Testbed{cfg: cfg, log: cfg.Logger.With("component", "testbed"), done: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			ln.Close()
			t.cancel()
			t.closeClients()
			t.removeCorpusDir()
		}
	}()

	if err := t.deploy(ctx, sponsor); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	if err := t.secrets(); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	if err := t.writeCorpus(); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	t.host = ln.Addr().String()
	t.url = "http://" + t.host
	t.srv = &http.Server{
		Handler:           t.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(t.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return t.ctx },
	}
	go func() {
		defer close(t.done)
		if err := t.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.log.Error("serve", "err", err)
		}
	}()
	ok = true
	t.log.Info("testbed serving", "url", t.url, "registry", t.Registry())
	return t, nil
}

// checkLoopback refuses a listen address whose host is not loopback: the
// testbed serves a private key and stored XSS on purpose.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q: not a loopback address", addr)
	}
	return nil
}

// deploy dials the chain, deploys the registry and registers the two names.
func (t *Testbed) deploy(ctx context.Context, sponsor *chain.Key) error {
	c, err := chain.Dial(ctx, t.cfg.RPC, chain.Options{ChainID: t.cfg.ChainID, Logger: t.cfg.Logger})
	if err != nil {
		return err
	}
	t.chain = c
	ec, err := ethclient.DialContext(ctx, t.cfg.RPC)
	if err != nil {
		return fmt.Errorf("dial %s: %w", t.cfg.RPC, err)
	}
	a, err := registryABI()
	if err != nil {
		ec.Close()
		return err
	}
	t.reg = &registry{eth: ec, abi: a}

	code, err := registryBytecode()
	if err != nil {
		return err
	}
	r, err := c.Deploy(ctx, sponsor, code)
	if err != nil {
		return fmt.Errorf("deploy registry: %w", err)
	}
	t.reg.addr, t.reg.since = common.Address(r.Contract), r.Block
	t.owner = common.Address(sponsor.Address())
	t.log.Info("registry deployed", "address", r.Contract.String(), "tx", r.Tx)

	user, err := chain.GenerateKey()
	if err != nil {
		return err
	}
	if _, err := c.Transfer(ctx, sponsor, user.Address(), userFunds); err != nil {
		return fmt.Errorf("fund user key: %w", err)
	}
	steps := []struct {
		key        *chain.Key
		method     string
		args       []any
		what, name string
	}{
		{sponsor, "register", []any{Alice}, "register", Alice},
		{sponsor, "setMetadata", []any{Alice, [32]byte(KeyTitle), []byte(aliceTitle)}, "set title of", Alice},
		{sponsor, "setMetadata", []any{Alice, [32]byte(KeyFace), []byte(aliceFace)}, "set face of", Alice},
		{user, "register", []any{Bob}, "register", Bob},
		{user, "setMetadata", []any{Bob, [32]byte(KeyTitle), []byte(bobTitle)}, "set title of", Bob},
		{user, "setMetadata", []any{Bob, [32]byte(KeyFace), []byte(bobFace)}, "set face of", Bob},
	}
	for _, s := range steps {
		data, err := a.Pack(s.method, s.args...)
		if err != nil {
			return fmt.Errorf("%s %s: pack: %w", s.what, s.name, err)
		}
		if err := sendRaw(ctx, c, s.key, r.Contract, data); err != nil {
			return fmt.Errorf("%s %s: %w", s.what, s.name, err)
		}
	}
	return nil
}

// sendRaw sends a transaction, retrying for up to about a second while the
// node says the sender has no funds: a node can return the receipt of the
// transfer that funded a fresh key before its transaction pool has caught up
// with that block (seen with the embedded dev chain).
func sendRaw(ctx context.Context, c *chain.Client, key *chain.Key, to fleet.Address, data []byte) error {
	for attempt := 0; ; attempt++ {
		_, err := c.SendRaw(ctx, key, to, data, nil)
		if err == nil || attempt == 40 || !strings.Contains(err.Error(), "insufficient funds") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Seed metadata. Bob's face is the stored XSS payload of flaw S1: a user
// wrote it, the face renders it unescaped.
const (
	aliceTitle = "Alice's Tea Room"
	aliceFace  = `<h1>Alice's Tea Room</h1><p>Fresh tea, served on chain. Ask my agent for today's blend.</p>`
	bobTitle   = "bob"
	bobFace    = `<h1>bob was here</h1><script>alert("xss:" + document.domain)</script><img src=x onerror="fetch('/.env')">`
)

// secrets makes the planted secrets: an unfunded throwaway private key (S2)
// and the internal token a spoofed admin caller is shown (S4).
func (t *Testbed) secrets() error {
	k, err := chain.GenerateKey()
	if err != nil {
		return err
	}
	t.leakedKey = "0x" + hex.EncodeToString(crypto.FromECDSA(k.PrivateKey()))
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	t.adminToken = "tbk_" + hex.EncodeToString(tok)
	return nil
}

// writeCorpus copies the compiler's known-good sources into the corpus dir.
func (t *Testbed) writeCorpus() error {
	dir := t.cfg.CorpusDir
	if dir == "" {
		d, err := os.MkdirTemp("", "testbed-corpus-")
		if err != nil {
			return fmt.Errorf("corpus dir: %w", err)
		}
		dir, t.removeCorpus = d, true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("corpus dir: %w", err)
	}
	// The target line is read by other programs in other directories.
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	t.corpusDir = dir
	files, err := fs.Glob(corpusFS, "compiler/corpus/*.tl")
	if err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	for _, f := range files {
		b, err := corpusFS.ReadFile(f)
		if err != nil {
			return fmt.Errorf("corpus: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return fmt.Errorf("corpus: %w", err)
		}
	}
	return nil
}

// URL returns the base URL of the HTTP server, e.g. http://127.0.0.1:41234.
func (t *Testbed) URL() string { return t.url }

// Registry returns the registry's address as 0x-prefixed lowercase hex.
func (t *Testbed) Registry() string { return fleet.Address(t.reg.addr).String() }

// Target returns the target section describing this testbed to the fleet.
func (t *Testbed) Target() TargetConfig {
	return TargetConfig{
		Registry:       t.Registry(),
		Faces:          t.url + "/{name}/",
		Call:           t.url + "/call",
		Docs:           []string{t.url + "/llms.txt", t.url + "/skill.md"},
		Compiler:       slices.Clone(t.cfg.Compiler),
		FetchAllow:     []string{t.host},
		AdminFunctions: slices.Clone(AdminFunctions),
		Names:          []string{Alice, Bob},
		Corpus:         t.corpusDir,
		SLO:            TargetSLO{P95MS: int(SLO / time.Millisecond)},
	}
}

// TargetJSON returns {"target": {...}} on one line (no newline), the line
// `fleetd testbed serve` prints.
func (t *Testbed) TargetJSON() ([]byte, error) {
	b, err := json.Marshal(struct {
		Target TargetConfig `json:"target"`
	}{t.Target()})
	if err != nil {
		return nil, fmt.Errorf("encode target: %w", err)
	}
	return b, nil
}

// Close stops the HTTP server (cancelling in-flight requests, including
// planted sleeps), closes the chain connections and removes a temporary
// corpus dir. It returns within about 5 s and is safe to call more than once.
func (t *Testbed) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		var errs []error
		if err := t.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("testbed: shutdown: %w", err))
			t.srv.Close()
		}
		select { // Serve returns as soon as Shutdown or Close has closed the listener
		case <-t.done:
		case <-time.After(time.Second):
			errs = append(errs, errors.New("testbed: server goroutine did not stop"))
		}
		t.closeClients()
		if err := t.removeCorpusDir(); err != nil {
			errs = append(errs, err)
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

func (t *Testbed) closeClients() {
	if t.reg != nil {
		t.reg.eth.Close()
	}
	if t.chain != nil {
		t.chain.Close()
	}
}

func (t *Testbed) removeCorpusDir() error {
	if !t.removeCorpus {
		return nil
	}
	t.removeCorpus = false
	if err := os.RemoveAll(t.corpusDir); err != nil {
		return fmt.Errorf("testbed: remove corpus: %w", err)
	}
	return nil
}
