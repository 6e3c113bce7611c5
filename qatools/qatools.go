// Package qatools builds the qa_* tools of DESIGN.md §5 — qa_create,
// qa_compile, qa_publish, qa_call, qa_fetch, qa_chain and qa_report — plus
// qa_fuzz (bounded fuzz-engine sessions), qa_submit (a POST, PUT or
// PATCH with a form or JSON body) and qa_login (Sign-In with Ethereum for
// identities of the run, whose sessions qa_fetch, qa_call and qa_submit
// attach with `as`) and qa_authz (a two-identity finding's one-call repro,
// with fresh identities of its own; all four in docs/architecture.md) for one
// run, over a shared Env (the chain, the target, the reporter) and the run's
// own sandbox and meter.
//
// The fences live here and below, never in the model's goodwill: the dial
// gate is fleet.Registry.Dispatch (and, for any transaction, the chain write
// guard through DialHook); a name is written only if this run's ledger minted
// it; every write spends from the run's meter first; files go only through the
// jail; fetches go only to allowlisted hosts and never to special addresses;
// chain reads go only through the read-only allowlist; a qa_submit spends a
// write like a transaction does. Tool failures come back
// as {"ok":false,"error":...} results for the model; a Go error from a handler
// means the run cannot go on.
package qatools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// Env is what every run shares: the platform, the chain and the reporter.
type Env struct {
	Target   fleet.Target
	Chain    *chain.Client      // nil: chain tools report "chain not configured"
	Log      *chain.FeedbackLog // fleetd's feedback log
	Registry *chain.Registry    // the target's name registry
	FleetKey *chain.Key         // the fleet identity: signs findings, holds no funds
	Sponsor  *chain.Key         // pays gas and funds throwaway keys
	Reporter Reporter           // qa_report posts through it; nil: qa_report fails
	Fetcher  *Fetcher           // qa_fetch under target.fetch_allow
	Call     *http.Client       // qa_call's client (the call URL is fixed by the target)
	Pacer    *Pacer             // spaces qa_fetch and qa_call per host; nil: one from Limits
	Limits   Limits
	Logger   *slog.Logger
	// Accounts are the test accounts operators give by role
	// (target.auth.accounts, loaded by cmd): qa_login signs in with them
	// and they sign nothing else.
	Accounts map[string]*chain.Key
	// FuzzDir is <data_dir>/fuzz: qa_fuzz's persistent corpora (one
	// directory per target key) and the Go build and module caches. Empty:
	// nothing persists across runs.
	FuzzDir string
	// HarnessModel, when set, is a model planner that writes or repairs
	// fuzz harnesses for a repository without a fuzz target (the
	// generate, compile, fix loop, AuthorHarnesses); nil: the generator
	// alone does the job.
	HarnessModel fleet.Model
}

// Limits are the tools' own bounds.
type Limits struct {
	CompileTimeout time.Duration // default 10 s
	CallTimeout    time.Duration // default 15 s
	MaxSource      int           // bytes of source qa_compile/qa_publish accept; default 1 MiB
	MaxReply       int           // bytes of a reply/body kept in a result; default 16 KiB
	FundWei        uint64        // what each throwaway key is funded with; default 0.01 ETH
	// FuzzWorkers is how many processes qa_fuzz's in-process engines
	// (libfuzzer, go) fuzz with at once; default DefaultFuzzWorkers.
	FuzzWorkers int
	// RequestRate is how many requests per second qa_fetch and qa_call send
	// to one host; default DefaultRequestRate, negative: unpaced (a 429 is
	// still backed off). RequestBurst is the burst allowed (default the rate).
	RequestRate  float64
	RequestBurst int
}

func (l Limits) withDefaults() Limits {
	if l.CompileTimeout <= 0 {
		l.CompileTimeout = 10 * time.Second
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = 15 * time.Second
	}
	if l.MaxSource <= 0 {
		l.MaxSource = 1 << 20
	}
	if l.MaxReply <= 0 {
		l.MaxReply = 16 << 10
	}
	if l.FundWei == 0 {
		l.FundWei = 10_000_000_000_000_000 // 0.01 ETH
	}
	if l.RequestRate == 0 {
		l.RequestRate = DefaultRequestRate
	}
	if l.RequestBurst <= 0 {
		l.RequestBurst = max(1, int(math.Ceil(l.RequestRate)))
	}
	return l
}

// pacerMu guards the lazy Pacer of an Env shared by concurrent runs.
var pacerMu sync.Mutex

// pacer returns env's Pacer, making one from Limits on first use.
func (env *Env) pacer() *Pacer {
	pacerMu.Lock()
	defer pacerMu.Unlock()
	if env.Pacer == nil {
		l := env.Limits.withDefaults()
		env.Pacer = NewPacer(l.RequestRate, l.RequestBurst)
	}
	return env.Pacer
}

// Run is one run's private state.
type Run struct {
	ID      string
	Source  string // the specialist's reporting source, e.g. "qa-fuzz"
	Sandbox *sandbox.Sandbox
	Meter   *sandbox.Meter
	// PageWrites, when set, is the gate of the run's rendering crawl: what
	// the answers to the page writes it let through named as created
	// (PageWrites.Created) qa_submit may DELETE too, as its own POSTs'.
	PageWrites *PageWrites
	// Sessions, when set, keeps the identities qa_login signs in, so the
	// run's rendering crawl can render as one (Sessions.Browser); nil:
	// the tools keep them to themselves.
	Sessions *Sessions
}

// Tools returns the tools bound to env and run.
func Tools(env *Env, run *Run) []fleet.Tool {
	env.Limits = env.Limits.withDefaults()
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	t := &tools{env: env, run: run, ids: run.Sessions}
	if t.ids == nil {
		t.ids = &Sessions{}
	}
	return []fleet.Tool{
		fleet.NewTool("qa_create", "Mint the next sandbox name qa-<run>-<n> under a fresh throwaway key (funded by the sponsor, released when the run ends). Returns name, owner, tx, gas_used, owner_verified.", fleet.Exercise, t.create),
		fleet.NewTool("qa_compile", "Run the target's compiler on source inside the jail. Returns outcome (compiled, rejected, crashed, timeout for a hang, or resource for memory exhaustion), exit_code, signal, stderr_tail (and stderr_head when long), crash_state (a crash's normalized message and top frames), bytes, sha256, duration_ms.", fleet.Observe, t.compile),
		fleet.NewTool("qa_publish", "Write to the metadata of a name this run minted: {name, source[, field]} compiles source and writes the artifact (default field face); {name, key, text} writes text as is under key (a field name, hashed like the registry's keys, or an explicit 0x bytes32). Returns key, tx, gas_estimated, gas_used, revert_reason, writes_left.", fleet.Exercise, t.publish),
		fleet.NewTool("qa_call", "Send one request to the platform's agent-call endpoint. Returns status, reply (capped), hint.", fleet.Exercise, t.call),
		fleet.NewTool("qa_fetch", "GET (or HEAD, or OPTIONS with an origin: a CORS preflight) an allowlisted public URL, optionally with an Origin header, following redirects (each hop re-checked) unless follow_redirects is false, which returns the redirect itself with every response header. Returns status, content_type, bytes, sha256, body (capped), headers, final_url.", fleet.Observe, t.fetch),
		fleet.NewTool("qa_submit", "Send one POST (or PUT, PATCH) with a body to an allowlisted URL, as a form or a page's script would: fields form-encoded (enctype form, the default) or multipart, or a JSON body (enctype json); or a DELETE, without a body, of a URL an earlier POST of this run created. It changes the platform: it spends one write of the run's budget. Fences and result as qa_fetch's, plus writes_left and, when a POST's answer names what it created (Location, or the new object's url or id), created.", fleet.Exercise, t.submit),
		fleet.NewTool("qa_login", "Sign an identity in with Sign-In with Ethereum (EIP-4361): GET the nonce, sign the message with the identity's key (a fresh throwaway key per identity name, or the test account target.auth.accounts gives a role), POST {message, signature} to the verify URL, and keep the session (cookie or bearer token) for qa_fetch, qa_call and qa_submit calls that name it in `as`. With tamper, sends a login a correct server refuses and says whether it was accepted. It creates state on the platform: one write of the run's budget. Returns identity, address, status, session (what it holds, never its values), and rotated when the identity was signed in already (its session's cookies go with the new sign-in: a new session must come back).", fleet.Exercise, t.login),
		fleet.NewTool("qa_authz", "Replay a finding only two identities show, with fresh throwaway identities of its own (a repro: no session, key or other user's data in it): signs them in as qa_login does (one write each) and checks object (a's resource, url templated with {address} or {id}, optionally first written by a with write_method and write_json, read by b), function (an endpoint reserved for a role read by a plain identity, refused without a session), property (field written on an identity's own resource and read back) or logout (a session still answering me_url after logout_url). Returns outcome (reproduced, not_reproduced, inconclusive), detail, the statuses and the names of the fields that show it, never their values; before answering it writes back what it changed (as the identity that owns it) and deletes what its POSTs created: undone says what, left_on_platform what it could not undo (its fresh identities' accounts at least), with why.", fleet.Exercise, t.authz),
		fleet.NewTool("qa_chain", "Read-only chain access: eth_call, eth_getCode, eth_getBalance, eth_blockNumber, eth_getLogs, eth_estimateGas, eth_chainId, or a named read: owner_of [name], metadata [name, field or 0x key], metadata_events [name?] (the MetadataSet events of the target registry: which names set which keys), feedback_count, feedback_range [start, count], simulate [signature] (calls the target registry from a fresh address).", fleet.Observe, t.chainRead),
		fleet.NewTool("qa_fuzz", "Run one bounded fuzzing session inside the jail: engine auto (AFL++ when installed, else the built-in engine, on target.compiler; Go's coverage-guided go test -fuzz on target.repo's fuzz target), builtin, blind, go or aflpp, for seconds (default 20). Returns engine, execs, and the distinct crashers (input, outcome, crash_state, stderr_head, and a note saying how a hang was confirmed when its replay was starved) to replay and minimize with qa_compile; with replay (engine go), runs one go test fuzz v1 input through the fuzz target; with harness (target.repo without a fuzz target): list generates fuzz targets for its entry points, a generated target's name fuzzes it, and with replay judges the crash (library or harness) and returns a reproducer test.", fleet.Observe, t.fuzzTool),
		fleet.NewTool("qa_report", "Post a finding to the on-chain feedback log as a qa/v1 envelope under this specialist's source. Returns entry_id and tx, or queued / deduped.", fleet.Observe, t.report),
	}
}

// NewRegistry returns a registry holding Tools(env, run), or only the named
// ones when names is non-empty.
func NewRegistry(env *Env, run *Run, names ...string) (*fleet.Registry, error) {
	all := fleet.NewRegistry()
	for _, t := range Tools(env, run) {
		if err := all.Add(t); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return all, nil
	}
	return all.Subset(names)
}

type tools struct {
	env *Env
	run *Run

	mu      sync.Mutex
	created map[string]bool // what the run's qa_submit POSTs created (its DELETEs' only targets): true while its DELETE is owed (a write reserved)
	ids     *Sessions       // the run's signed-in identities (qa_login): Run.Sessions, shared with the rendering crawl
}

var errNoChain = errors.New("chain not configured (set chain.rpc)")

func (t *tools) needChain() error {
	if t.env.Chain == nil {
		return errNoChain
	}
	return nil
}

// spendWrite reserves one on-chain write from the run's budget.
func (t *tools) spendWrite() error { return t.run.Meter.Spend(fleet.ResWrites, 1) }

func weiString(w uint64) string { return weiBig(w).String() }

func weiBig(w uint64) *big.Int { return new(big.Int).SetUint64(w) }

// errorText renders an error for a result, preferring a revert's own words.
func errorText(err error) string {
	var re *chain.RevertError
	if errors.As(err, &re) {
		return re.Error()
	}
	return err.Error()
}

// revertReason is the decoded revert, "" if err is not a revert.
func revertReason(err error) string {
	var re *chain.RevertError
	if errors.As(err, &re) {
		return re.Error()
	}
	return ""
}

// ctxErr turns cancellation into the handler error that ends the run.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("run cancelled: %w", err)
	}
	return nil
}
