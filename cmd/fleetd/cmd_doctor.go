package main

import (
	"context"
	"fmt"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/doctor"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/spf13/cobra"
)

// doctor runs every check against the loaded config (cfgErr is the error
// loading it, if any). Checks never write to the chain and never print
// secrets: key files are named by path and address only.
func (a serviceCommands) doctor(ctx context.Context, cfgErr error) []doctor.Check {
	var out []doctor.Check
	add := func(c doctor.Check) { out = append(out, c) }
	skip := func(name, why string, fatal bool) {
		add(doctor.Check{Name: name, Fatal: fatal, Detail: "not checked: " + why})
	}

	// The config.
	switch {
	case cfgErr != nil:
		return a.doctorUnloaded(ctx, cfgErr)
	case a.configPath == "":
		add(doctor.Check{Name: "config", Fatal: true, Detail: "no --config given", Fix: "pass --config F (configs/fleetd.example.yaml documents every key)"})
	default:
		add(doctor.Check{Name: "config", OK: true, Fatal: true, Detail: a.cfg.path + " validates"})
	}
	for _, w := range a.cfg.Deprecated() {
		add(doctor.Check{Name: "config", Warn: true, Detail: w, Fix: "use the new key name; the old one will stop being read"})
	}
	cc := a.cfg.Chain

	// The node and the log.
	rpc, cl := doctor.RPC(ctx, cc.RPC, cc.ChainID, func(ctx context.Context) (*chain.Client, error) {
		return a.dial(ctx, conn{rpc: cc.RPC, chainID: cc.ChainID})
	})
	add(rpc)
	if cl != nil {
		defer cl.Close()
	}
	switch {
	case cc.FeedbackLog == "":
		add(doctor.Check{Name: "feedback log", Fatal: true, Detail: "chain.feedback_log is not set", Fix: "deploy one (fleetd chain deploy --config F) and set chain.feedback_log to its address"})
	case cl == nil:
		add(doctor.Check{Name: "feedback log", Fatal: true, NodeDown: true, Detail: "not checked: the node did not answer"})
	default:
		addr, _ := fleet.ParseAddress(cc.FeedbackLog) // validated at load
		add(doctor.FeedbackLog(ctx, cl, addr))
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
		out = append(out, doctor.Trust(fleetKey.Address(), cc.TrustedSenders))
	}

	// The target.
	target, terr := a.cfg.target()
	if terr == nil {
		terr = target.Validate("target")
	}
	if terr != nil {
		add(doctor.Check{Name: "target", Fatal: true, Detail: terr.Error(), Fix: "write the target: section (configs/fleetd.example.yaml)"})
	} else {
		out = append(out, doctor.TargetURLs(ctx, target, a.cfg.Tools.FetchTimeout)...)
		out = append(out, doctor.Corpus(ctx, target, a.sandboxDir(), a.cfg.Tools.CompileTimeout)...)
	}
	var repo *fleet.Repo
	if terr == nil {
		repo = target.Repo
	}
	out = append(out, doctor.LibFuzzer(ctx, repo, a.fuzzDir()), doctor.AFL(fuzzing.AFLPath(), fuzzing.AFLClangFast()))
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
func (a serviceCommands) doctorUnloaded(ctx context.Context, cfgErr error) []doctor.Check {
	var out []doctor.Check
	for i, err := range configErrors(cfgErr) {
		c := doctor.Check{Name: "config", Fatal: true, Detail: err.Error()}
		if i == 0 {
			c.Fix = "correct every line below too (configs/fleetd.example.yaml documents every key)"
		}
		out = append(out, c)
	}
	const why = "not checked: the config did not load"
	for _, name := range []string{"rpc", "feedback log", "fleet key", "sponsor key", "sponsor funds", "target", "crawl engine", "renderer jail", "schedule"} {
		out = append(out, doctor.Check{Name: name, NotChecked: true, Detail: why})
	}
	out = append(out, doctor.LibFuzzer(ctx, nil, ""), doctor.AFL(fuzzing.AFLPath(), fuzzing.AFLClangFast()))
	if a.dataDirFlag == "" {
		return append(out, doctor.Check{Name: "data dir", NotChecked: true, Detail: why + " (it names the data dir; --data-dir D checks D)"})
	}
	return append(out, a.dataDirChecks()...)
}

// doctorKey is doctor.Key on the key file named by field, resolved
// against the config file; it returns the key, nil when it does not load.
func (a serviceCommands) doctorKey(out *[]doctor.Check, name, file, field, howNew string) *chain.Key {
	path := ""
	if file != "" {
		path = a.cfg.resolve(file)
	}
	c, k := doctor.Key(name, path, field, howNew)
	*out = append(*out, c)
	return k
}

// sponsorFunds is doctor.SponsorFunds with the budget the config gives
// a day: daemon.daily_budget.max_wei, or one run's.
func (a serviceCommands) sponsorFunds(ctx context.Context, cl *chain.Client, sponsor *chain.Key) doctor.Check {
	budget, what := a.cfg.Daemon.Daily.MaxWei, "daemon.daily_budget.max_wei"
	if budget == 0 {
		budget, what = a.cfg.budget().MaxWei, "one run's budget.max_wei (no daily limit set)"
	}
	return doctor.SponsorFunds(ctx, cl, sponsor, budget, what)
}

// dataDirChecks are doctor.DataDir's on the data dir.
func (a serviceCommands) dataDirChecks() []doctor.Check {
	return doctor.DataDir(a.dataDir(), a.control())
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
			if n := doctor.Print(a.stdout, sanitize, cs); n > 0 {
				return &exitError{code: 1, err: fmt.Errorf("doctor: %d of %d checks failed", n, len(cs))}
			}
			return nil
		},
	}
}
