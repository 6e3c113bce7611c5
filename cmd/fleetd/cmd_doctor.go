package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/doctor"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
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
		out = append(out, fromDoctor(doctor.Trust(fleetKey.Address(), cc.TrustedSenders))...)
	}

	// The target.
	target, terr := a.cfg.target()
	if terr == nil {
		terr = target.Validate("target")
	}
	if terr != nil {
		add(check{name: "target", fatal: true, detail: terr.Error(), fix: "write the target: section (configs/fleetd.example.yaml)"})
	} else {
		out = append(out, fromDoctor(doctor.TargetURLs(ctx, target, a.cfg.Tools.FetchTimeout)...)...)
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
			out = append(out, fromDoctor(doctor.Compiler(ctx, a.sandboxDir(), target.Compiler, corpus[0], a.cfg.Tools.CompileTimeout))...)
		}
	}
	var repo *fleet.Repo
	if terr == nil {
		repo = target.Repo
	}
	out = append(out, fromDoctor(doctor.LibFuzzer(ctx, repo, a.fuzzDir()), doctor.AFL(fuzzing.AFLPath(), fuzzing.AFLClangFast()))...)
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
	out = append(out, fromDoctor(doctor.LibFuzzer(ctx, nil, ""), doctor.AFL(fuzzing.AFLPath(), fuzzing.AFLClangFast()))...)
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

// sponsorFunds is doctor.SponsorFunds with the budget the config gives
// a day: daemon.daily_budget.max_wei, or one run's.
func (a serviceCommands) sponsorFunds(ctx context.Context, cl *chain.Client, sponsor *chain.Key) check {
	budget, what := a.cfg.Daemon.Daily.MaxWei, "daemon.daily_budget.max_wei"
	if budget == 0 {
		budget, what = a.cfg.budget().MaxWei, "one run's budget.max_wei (no daily limit set)"
	}
	return fromDoctor(doctor.SponsorFunds(ctx, cl, sponsor, budget, what))[0]
}

// dataDirChecks are doctor.DataDir's on the data dir.
func (a serviceCommands) dataDirChecks() []check {
	return fromDoctor(doctor.DataDir(a.dataDir(), a.control())...)
}

// fromDoctor is package doctor's lines as this command prints them.
func fromDoctor(cs ...doctor.Check) []check {
	out := make([]check, len(cs))
	for i, c := range cs {
		out[i] = check{name: c.Name, ok: c.OK, fatal: c.Fatal, warn: c.Warn, detail: c.Detail, fix: c.Fix}
	}
	return out
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
