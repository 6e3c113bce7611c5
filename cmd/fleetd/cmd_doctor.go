package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/specialists"
	"github.com/spf13/cobra"
)

// check is one line of `fleetd doctor`: what was checked, whether it passed,
// what was seen, and how to fix it. A fatal check that fails stops `fleetd
// run` from starting; the others are worth knowing but a daemon can run.
type check struct {
	name   string
	ok     bool
	fatal  bool
	warn   bool // a failed warning shows "!" and does not fail doctor: a fallback runs instead
	detail string
	fix    string

	// nodeDown marks a check that failed only because the node did not
	// answer: fleetd run starts degraded instead of refusing (firstFatalUp).
	nodeDown bool
	// notChecked marks a check that could not run because what it reads
	// did not load: shown with "–", neither passed nor failed.
	notChecked bool
}

// Free space below which the data dir check fails (run records, outbox and
// the triage store all live there).
const minFreeBytes = 256 << 20

// Findings a day the sponsor should be able to pay for on top of the wei
// budget, at ~150k gas each (a sponsored submitFeedbackFor with its text).
const (
	sponsorFindingsPerDay = 200
	gasPerFinding         = 150_000
)

// doctor runs every check against the loaded config (cfgErr is the error
// loading it, if any). Checks never write to the chain and never print
// secrets: key files are named by path and address only.
func (a serviceCommands) doctor(ctx context.Context, cfgErr error) []check {
	var out []check
	add := func(c check) { out = append(out, c) }
	skip := func(name, why string, fatal bool) {
		add(check{name: name, fatal: fatal, detail: "not checked: " + why})
	}

	// The config.
	switch {
	case cfgErr != nil:
		return a.doctorUnloaded(ctx, cfgErr)
	case a.configPath == "":
		add(check{name: "config", fatal: true, detail: "no --config given", fix: "pass --config F (configs/fleetd.example.yaml documents every key)"})
	default:
		add(check{name: "config", ok: true, fatal: true, detail: a.cfg.path + " validates"})
	}
	for _, w := range a.cfg.Deprecated() {
		add(check{name: "config", warn: true, detail: w, fix: "use the new key name; the old one will stop being read"})
	}
	cc := a.cfg.Chain

	// The node and the log.
	var cl *chain.Client
	switch {
	case cc.RPC == "":
		add(check{name: "rpc", fatal: true, detail: "chain.rpc is not set", fix: "set chain.rpc to the node's JSON-RPC URL"})
	default:
		c, err := a.dial(ctx, conn{rpc: cc.RPC, chainID: cc.ChainID})
		switch {
		case errors.Is(err, chain.ErrWrongChain):
			add(check{name: "rpc", fatal: true, detail: err.Error(), fix: "fix chain.chain_id, or chain.rpc if it points at the wrong network"})
		case err != nil:
			add(check{name: "rpc", fatal: true, nodeDown: errors.Is(err, chain.ErrUnreachable), detail: err.Error(), fix: "start the node, or fix chain.rpc (for a local chain: fleetd chain devnet)"})
		default:
			cl = c
			defer cl.Close()
			head, _, _, herr := cl.Head(ctx)
			d := fmt.Sprintf("%s answers: chain id %d, block %d", cc.RPC, cl.ChainID(), head)
			if herr != nil {
				d = fmt.Sprintf("%s answers: chain id %d (head: %v)", cc.RPC, cl.ChainID(), herr)
			}
			if cc.ChainID == 0 {
				d += "; chain.chain_id is 0, so any chain is accepted"
			}
			add(check{name: "rpc", ok: true, fatal: true, detail: d})
		}
	}
	switch {
	case cc.FeedbackLog == "":
		add(check{name: "feedback log", fatal: true, detail: "chain.feedback_log is not set", fix: "deploy one (fleetd chain deploy --config F) and set chain.feedback_log to its address"})
	case cl == nil:
		add(check{name: "feedback log", fatal: true, nodeDown: true, detail: "not checked: the node did not answer"})
	default:
		addr, _ := fleet.ParseAddress(cc.FeedbackLog) // validated at load
		l := cl.FeedbackLog(addr)
		if err := l.CheckInterface(ctx); err != nil && nodeFailed(err) {
			// The node answered the dial, then a read of the log got no
			// answer (a timeout, a reset): that says nothing about the
			// contract, so `fleetd run` starts degraded instead of
			// refusing "not a FeedbackLog" (issue 25).
			add(check{name: "feedback log", fatal: true, nodeDown: true, detail: "not checked: the node stopped answering: " + nodeFailure(err)})
		} else if err != nil {
			add(check{name: "feedback log", fatal: true, detail: err.Error(),
				fix: "point chain.feedback_log at fleetd's FeedbackLog on this chain, or deploy one: fleetd chain deploy --config F"})
		} else {
			n, _ := l.Count(ctx)
			add(check{name: "feedback log", ok: true, fatal: true, detail: fmt.Sprintf("FeedbackLog at %s holds %d entries", addr, n)})
		}
	}

	// Keys.
	fleetKey := a.doctorKey(&out, "fleet key", cc.FleetKeyFile, "chain.fleet_key_file", "fleetd keys new --out F")
	sponsor := a.doctorKey(&out, "sponsor key", cc.SponsorKeyFile, "chain.sponsor_key_file", "fleetd keys new --out F, then fund its address")
	switch {
	case sponsor == nil:
		skip("sponsor funds", "no sponsor key", false)
	case cl == nil:
		skip("sponsor funds", "the node did not answer", false)
	default:
		add(a.sponsorFunds(ctx, cl, sponsor))
	}
	if fleetKey != nil {
		add(a.trustCheck(fleetKey.Address()))
	}

	// The target.
	target, terr := a.cfg.target()
	if terr == nil {
		terr = target.Validate("target")
	}
	if terr != nil {
		add(check{name: "target", fatal: true, detail: terr.Error(), fix: "write the target: section (configs/fleetd.example.yaml)"})
	} else {
		out = append(out, a.targetURLChecks(ctx, target)...)
		corpus, cerr := specialists.LoadCorpus(target.Corpus)
		switch {
		case target.Corpus == "":
			add(check{name: "corpus", ok: true, detail: "target.corpus is not set: the smoke and fuzz probes skip compiling"})
		case cerr != nil:
			add(check{name: "corpus", fatal: true, detail: cerr.Error(), fix: "set target.corpus to a directory of known-good sources (relative paths resolve against the config file)"})
		case len(corpus) == 0:
			add(check{name: "corpus", fatal: true, detail: target.Corpus + " holds no usable file (non-empty, at most 64 KiB, not hidden)", fix: "put known-good sources in target.corpus"})
		default:
			add(check{name: "corpus", ok: true, fatal: true, detail: fmt.Sprintf("%s: %d programs", target.Corpus, len(corpus))})
		}
		switch {
		case len(target.Compiler) == 0:
			add(check{name: "compiler", ok: true, detail: "target.compiler is not set: qa_compile is unavailable"})
		case len(corpus) == 0:
			skip("compiler", "no corpus file to compile", false)
		default:
			add(a.compilerCheck(ctx, target.Compiler, corpus[0]))
		}
	}
	var repo *fleet.Repo
	if terr == nil {
		repo = target.Repo
	}
	add(libFuzzerCheck(ctx, repo, a.fuzzDir()))
	add(aflCheck(fuzzing.AFLPath(), fuzzing.AFLClangFast()))
	add(a.crawlCheck())
	add(a.jailCheck())
	add(a.scheduleCheck(ctx)) // doctor_schedule.go

	// The data dir and the switches in it.
	out = append(out, a.dataDirChecks()...)
	return out
}

// doctorUnloaded is doctor for a config that did not load: a line for
// every error in it, "not checked" for every check that reads the config
// (its values are not known, so "chain.rpc is not set" would be wrong),
// and the checks that do not read it. The data dir is checked when
// --data-dir names it.
func (a serviceCommands) doctorUnloaded(ctx context.Context, cfgErr error) []check {
	var out []check
	for i, err := range configErrors(cfgErr) {
		c := check{name: "config", fatal: true, detail: err.Error()}
		if i == 0 {
			c.fix = "correct every line below too (configs/fleetd.example.yaml documents every key)"
		}
		out = append(out, c)
	}
	const why = "not checked: the config did not load"
	for _, name := range []string{"rpc", "feedback log", "fleet key", "sponsor key", "sponsor funds", "target", "crawl engine", "renderer jail", "schedule"} {
		out = append(out, check{name: name, notChecked: true, detail: why})
	}
	out = append(out, libFuzzerCheck(ctx, nil, ""), aflCheck(fuzzing.AFLPath(), fuzzing.AFLClangFast()))
	if a.dataDirFlag == "" {
		return append(out, check{name: "data dir", notChecked: true, detail: why + " (it names the data dir; --data-dir D checks D)"})
	}
	return append(out, a.dataDirChecks()...)
}

// doctorKey checks that the key file named by field loads (LoadKey refuses
// unsafe file modes) and returns the key, nil when it does not.
func (a serviceCommands) doctorKey(out *[]check, name, file, field, howNew string) *chain.Key {
	if file == "" {
		*out = append(*out, check{name: name, fatal: true, detail: field + " is not set", fix: "create one with " + howNew + " and set " + field})
		return nil
	}
	path := a.cfg.resolve(file)
	k, err := chain.LoadKey(path)
	if err != nil {
		fix := "create one with " + howNew + " and set " + field
		if fi, serr := os.Stat(path); serr == nil && fi.Mode().Perm()&0o077 != 0 {
			fix = "chmod 600 " + path
		}
		*out = append(*out, check{name: name, fatal: true, detail: err.Error(), fix: fix})
		return nil
	}
	*out = append(*out, check{name: name, ok: true, fatal: true, detail: fmt.Sprintf("%s loads (%s)", path, k.Address())})
	return k
}

// sponsorFunds checks the sponsor can pay for a day: the fleet's daily wei
// budget (or one run's, when no daily limit is set) plus the gas of a day's
// findings at today's gas price. An empty sponsor is fatal: nothing could be
// posted.
func (a serviceCommands) sponsorFunds(ctx context.Context, cl *chain.Client, sponsor *chain.Key) check {
	c := check{name: "sponsor funds"}
	bal, err := cl.Balance(ctx, sponsor.Address())
	if err != nil {
		c.detail = err.Error()
		return c
	}
	price, err := cl.GasPrice(ctx)
	if err != nil {
		c.detail = err.Error()
		return c
	}
	budget, what := a.cfg.Daemon.Daily.MaxWei, "daemon.daily_budget.max_wei"
	if budget == 0 {
		budget, what = a.cfg.budget().MaxWei, "one run's budget.max_wei (no daily limit set)"
	}
	gas := new(big.Int).Mul(price, big.NewInt(sponsorFindingsPerDay*gasPerFinding))
	need := new(big.Int).Add(new(big.Int).SetUint64(budget), gas)
	c.detail = fmt.Sprintf("%s holds %s; a day needs %s (%s %s + %d findings at %s gwei)",
		sponsor.Address(), ether(bal), ether(need), what, ether(new(big.Int).SetUint64(budget)), sponsorFindingsPerDay, gwei(price))
	switch {
	case bal.Sign() == 0:
		c.fatal = true
		c.fix = "fund " + sponsor.Address().String() + ": it pays for every finding and funds the runs' throwaway keys"
	case bal.Cmp(need) < 0:
		c.fix = "send the sponsor at least " + ether(new(big.Int).Sub(need, bal)) + " more, or lower the budgets"
	default:
		c.ok = true
	}
	return c
}

// trustCheck says whether the fleet's own findings count in triage everywhere
// this config is used. Triage always trusts the identity of the process
// running it, but a non-empty chain.trusted_senders without the fleet's
// address means processes with other identities will flag its findings.
func (a serviceCommands) trustCheck(addr fleet.Address) check {
	c := check{name: "trusted", ok: true}
	ts := a.cfg.Chain.TrustedSenders
	if len(ts) == 0 {
		c.detail = fmt.Sprintf("triage trusts %s as this fleet's identity (chain.trusted_senders is empty: other senders' findings are flagged)", addr)
		return c
	}
	for _, s := range ts {
		if t, err := fleet.ParseAddress(s); err == nil && t == addr {
			c.detail = fmt.Sprintf("%s is in chain.trusted_senders", addr)
			return c
		}
	}
	c.ok = false
	c.detail = fmt.Sprintf("%s is not in chain.trusted_senders: fleetd processes with another identity will flag its findings as untrusted", addr)
	c.fix = "add " + addr.String() + " to chain.trusted_senders"
	return c
}

// targetURLChecks checks every URL the probes use is allowed by
// target.fetch_allow and answers, through the same fetcher the probes use
// (allowlist, SSRF rules and all).
func (a serviceCommands) targetURLChecks(ctx context.Context, t fleet.Target) []check {
	allow, err := qatools.NewAllowlist(t.FetchAllow)
	if err != nil {
		return []check{{name: "fetch_allow", fatal: true, detail: err.Error(), fix: "fix target.fetch_allow"}}
	}
	timeout := a.cfg.Tools.FetchTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	f := qatools.NewFetcher(allow, timeout, 4<<10)
	name := "example"
	if len(t.Names) > 0 {
		name = t.Names[0]
	}
	urls := []struct{ what, url string }{{"target.faces", t.FaceURL(name)}, {"target.call", t.Call}}
	for i, d := range t.Docs {
		urls = append(urls, struct{ what, url string }{fmt.Sprintf("target.docs[%d]", i), d})
	}
	var out []check
	for _, u := range urls {
		c := check{name: "url " + u.what}
		if err := allow.Allows(u.url); err != nil {
			c.fatal = true
			c.detail = err.Error()
			c.fix = "add its host:port to target.fetch_allow"
			out = append(out, c)
			continue
		}
		res, err := f.Get(ctx, u.url)
		switch {
		case err != nil:
			c.detail = fmt.Sprintf("%s: %v", u.url, err)
		case !res.IsOK():
			c.detail = fmt.Sprintf("%s: %s", u.url, res.Err())
			c.fix = "check the platform is up and the URL is right (probes will report it unreachable)"
		default:
			c.ok = true
			c.detail = fmt.Sprintf("%s answers %v", u.url, res["status"])
		}
		out = append(out, c)
	}
	return out
}

// compilerCheck runs the compiler on one corpus program inside a throwaway
// jail, bounded like qa_compile, and removes the jail after.
func (a serviceCommands) compilerCheck(ctx context.Context, argv []string, source string) check {
	c := check{name: "compiler"}
	base := a.sandboxDir()
	sb, err := sandbox.Open(base, "doctor-"+sandbox.NewRunID(time.Now()))
	if err != nil {
		c.fatal = true
		c.detail = err.Error()
		c.fix = "make the data dir writable"
		return c
	}
	defer func() {
		sb.Close()
		os.RemoveAll(sb.Dir())
	}()
	const src = "src/input.src"
	if err := sb.WriteFile(src, []byte(source)); err != nil {
		c.detail = err.Error()
		return c
	}
	if err := sb.Root().MkdirAll("out", 0o700); err != nil {
		c.detail = err.Error()
		return c
	}
	args := make([]string, len(argv))
	for i, s := range argv {
		s = strings.ReplaceAll(s, "{src}", filepath.Join(sb.JailDir(), src))
		args[i] = strings.ReplaceAll(s, "{out}", filepath.Join(sb.JailDir(), "out", "output.bin"))
	}
	timeout := a.cfg.Tools.CompileTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: args, Dir: sb.JailDir(), Timeout: timeout})
	switch {
	case err != nil:
		c.fatal = true
		c.detail = fmt.Sprintf("%s does not run: %v", argv[0], err)
		c.fix = "fix target.compiler (a relative path resolves against the config file; a bare name is looked up in PATH)"
	case res.TimedOut:
		c.detail = fmt.Sprintf("%s did not finish a known-good corpus program within tools.compile_timeout (%s)", argv[0], timeout)
		c.fix = "raise tools.compile_timeout, or check the compiler"
	case res.ExitCode != 0 || res.Signal != "":
		tail, _ := sandbox.Text(res.Stderr, 200)
		c.detail = fmt.Sprintf("%s failed on the first corpus program (exit %d%s): %s", argv[0], res.ExitCode, sigNote(res.Signal), strings.TrimSpace(tail))
		c.fix = "check target.compiler's arguments ({src} is the source path) and that target.corpus holds programs it accepts"
	default:
		c.ok = true
		c.detail = fmt.Sprintf("%s compiled the first corpus program in the jail in %s", argv[0], res.Duration.Round(time.Millisecond))
	}
	return c
}

func sigNote(sig string) string {
	if sig == "" {
		return ""
	}
	return ", signal " + sig
}

// libFuzzerCheck says whether qa_fuzz can build Go fuzz targets with
// libFuzzer (clang and its libFuzzer runtime); without them it runs go test
// -fuzz, so a miss is a warning.
//
// With target.repo's fuzz target it also says whether that target's last
// libFuzzer build (qa_fuzz's, recorded under fuzzDir) failed: the engine
// is degraded, go test -fuzz runs in its place, and the check names the
// compiler's first error.
func libFuzzerCheck(ctx context.Context, repo *fleet.Repo, fuzzDir string) check {
	ok, why := fuzzing.LibFuzzerAvailable(ctx)
	if ok {
		if repo != nil && repo.FuzzTarget != "" {
			key := fuzzing.TargetKey("go", repo.URL, repo.FuzzPackage, repo.FuzzTarget)
			f, err := fuzzing.LastBuildFailure(filepath.Join(fuzzDir, key, "libfuzzer", "bin"))
			switch {
			case err != nil:
				return check{name: "libfuzzer", warn: true, detail: err.Error()}
			case f != nil:
				return check{name: "libfuzzer", warn: true,
					detail: fmt.Sprintf("degraded on %s: its libFuzzer build failed (%s): %s; qa_fuzz runs go test -fuzz instead", repo.FuzzTarget, f.At.Local().Format(time.RFC3339), f.Cause),
					fix:    "fix the error in " + repo.FuzzPackage + " (the next qa_fuzz session rebuilds)"}
			}
		}
		return check{name: "libfuzzer", ok: true, detail: why + ": qa_fuzz runs libFuzzer on Go fuzz targets"}
	}
	return check{name: "libfuzzer", warn: true, detail: why + "; qa_fuzz falls back to go test -fuzz on Go fuzz targets (no comparison feedback, no dictionary)",
		fix: "install clang and compiler-rt's libFuzzer runtime (Debian 12: apt-get install clang libclang-rt-14-dev)"}
}

// aflCheck says which AFL++ modes qa_fuzz has: instrumented builds of C and
// C++ sources (afl-clang-fast, CmpLog) and the blind -n mode for opaque
// binaries. A miss is a warning: the other engines still run.
func aflCheck(aflFuzz, clangFast string) check {
	switch {
	case aflFuzz == "":
		return check{name: "afl++", warn: true, detail: "afl-fuzz is not on PATH: qa_fuzz's aflpp engine is off (the built-in engine and libFuzzer still run)",
			fix: "apt-get install afl++"}
	case clangFast == "":
		return check{name: "afl++", warn: true, detail: aflFuzz + " runs opaque binaries blind (-n) only: afl-clang-fast is missing, so C and C++ sources in target.repo are not built instrumented",
			fix: "install AFL++'s LLVM mode (Debian: apt-get install afl++ clang)"}
	}
	return check{name: "afl++", ok: true, detail: aflFuzz + " with " + clangFast + ": C and C++ sources in target.repo are built instrumented (CmpLog, persistent mode with a harness); opaque binaries run blind (-n)"}
}

// dataDirChecks: the data dir is writable with room to spare; then the dial,
// the kill switch and the outbox, as they stand.
func (a serviceCommands) dataDirChecks() []check {
	dir := a.dataDir()
	w := check{name: "data dir", fatal: true}
	if err := probeWritable(dir); err != nil {
		w.detail = err.Error()
		w.fix = "create it and make it writable by this user, or pass --data-dir"
		return []check{w}
	}
	free, ferr := freeBytes(dir)
	switch {
	case ferr != nil:
		w.ok = true
		w.detail = fmt.Sprintf("%s is writable (free space unknown: %v)", dir, ferr)
	case free < minFreeBytes:
		w.detail = fmt.Sprintf("%s has only %s free", dir, bytesIEC(free))
		w.fix = "free some space (run records, the outbox and the triage store live here)"
	default:
		w.ok = true
		w.detail = fmt.Sprintf("%s is writable, %s free", dir, bytesIEC(free))
	}
	out := []check{w}
	ctl := a.control()
	dial, err := ctl.Dial()
	d := check{name: "dial", ok: err == nil, detail: dial.String()}
	if err != nil {
		d.detail, d.fix = err.Error(), "fleetd dial set RUNG --reason \"...\" rewrites it"
	} else if dial == fleet.Observe {
		d.detail += " (read-only probes; fleetd dial set exercise --reason \"...\" lets them mint, publish and call)"
	}
	out = append(out, d)
	paused, err := ctl.Paused()
	p := check{name: "kill switch", ok: err == nil && !paused, detail: "not paused"}
	switch {
	case err != nil:
		p.detail = err.Error()
	case paused:
		p.detail, p.fix = "paused: no run starts", "fleetd resume --config F"
	}
	out = append(out, p)
	items, _ := filepath.Glob(filepath.Join(dir, "outbox", "*.json"))
	o := check{name: "outbox", ok: true, detail: "empty"}
	if len(items) > 0 {
		o.detail = fmt.Sprintf("%d findings wait to be posted (they go at the next start or probe, once the log can be written)", len(items))
	}
	return append(out, o)
}

// probeWritable creates, syncs and removes a file in dir (creating dir).
func probeWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.WriteString("ok")
	serr := f.Sync()
	cerr := f.Close()
	os.Remove(name)
	return errors.Join(werr, serr, cerr)
}

func ether(wei *big.Int) string {
	f, _ := new(big.Float).Quo(new(big.Float).SetInt(wei), big.NewFloat(1e18)).Float64()
	return fmt.Sprintf("%.6g ETH", f)
}

func gwei(wei *big.Int) string {
	f, _ := new(big.Float).Quo(new(big.Float).SetInt(wei), big.NewFloat(1e9)).Float64()
	return fmt.Sprintf("%.3g", f)
}

func bytesIEC(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// printChecks writes one line per check and returns how many failed.
func printChecks(w io.Writer, cs []check) (failed int) {
	width := 0
	for _, c := range cs {
		width = max(width, len(c.name))
	}
	for _, c := range cs {
		mark := "✓"
		switch {
		case c.notChecked:
			mark = "–"
		case !c.ok && c.warn:
			mark = "!"
		case !c.ok:
			mark = "✗"
			failed++
		}
		line := fmt.Sprintf("%s %-*s  %s", mark, width, c.name, sanitize(c.detail))
		if !c.ok && c.fix != "" {
			line += " — fix: " + c.fix
		}
		fmt.Fprintln(w, line)
	}
	return failed
}

// nodeFailed reports whether err is the node not answering (unreachable,
// a timeout, a connection reset or an answer cut short) rather than an
// answer that says something.
func nodeFailed(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.Is(err, chain.ErrUnreachable) || errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// nodeFailure is the network failure inside err, for a message that does
// not repeat what the failed check would have concluded.
func nodeFailure(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Error()
	}
	return err.Error()
}

// firstFatalUp is firstFatal for the daemon, which starts degraded while
// its node is down: a check that failed only because the node did not answer
// is not fatal there. down lists those checks.
func firstFatalUp(cs []check) (bad check, fatal bool, down []check) {
	for _, c := range cs {
		switch {
		case c.ok || !c.fatal:
		case c.nodeDown:
			down = append(down, c)
		case !fatal:
			bad, fatal = c, true
		}
	}
	return bad, fatal, down
}

// firstFatal returns the first failed fatal check.
func firstFatal(cs []check) (check, bool) {
	for _, c := range cs {
		if c.fatal && !c.ok {
			return c, true
		}
	}
	return check{}, false
}

func (a serviceCommands) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor [--config F]",
		Short: "Check the setup: config, node, log, keys, funds, target, compiler, libfuzzer, data dir; one line per check",
		Long: `Checks, one line each, ✓ or ✗ with the fix: the config validates; the RPC
answers with the configured chain id; a FeedbackLog is deployed at
chain.feedback_log; the fleet and sponsor keys load with safe file modes; the
sponsor's balance covers a day of the budget; the fleet's identity is trusted
by triage; every target URL is allowed by target.fetch_allow and answers; the
corpus is there and the compiler compiles one of its programs inside a jail
within its timeout; clang links libFuzzer (a warning, "!", when not: qa_fuzz
then runs go test -fuzz on Go fuzz targets); the data dir is writable with
free space; the dial, the kill switch and the outbox. Exits 0 only when every
check but the warnings passes. Nothing is written to the chain and no secret
is printed. fleetd run runs the same
checks at start and refuses to start when a fatal one fails.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{lazyConfig: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs := a.doctor(cmd.Context(), a.cfgErr)
			if n := printChecks(a.stdout, cs); n > 0 {
				return &exitError{code: 1, err: fmt.Errorf("doctor: %d of %d checks failed", n, len(cs))}
			}
			return nil
		},
	}
}
