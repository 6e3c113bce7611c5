// Package pipeline composes fleetd's features into pipelines, below cmd:
// cmd turns the config and its flags into a pipeline's config struct,
// builds the adapters (forges, models, the poster) and calls it.
//
// The fix pipeline (Fix) is triage's work items through the fix stage:
// WorkItems and Fix.Item turn triage's clusters into fixer items with
// their on-chain entries (sender and time from the log, the transaction
// from chain's EntryTxs), a reproducer replays a repro in a fresh sandbox
// run through qatools' registry and dial gate (fixer.Reproducer), and
// Fix.Run runs one fixer job in a sandbox of its own within the job's
// budget. Fix.Next is the daemon's choice of the next work item; PRLinks
// gives the report each cluster's pull request. FixRecords and MetaPoster
// are the poster as the fix stage's and triage's posters.
package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/triage"
)

// FixConfig is what the fix pipeline is composed of: the fixer's plain
// values and the adapters cmd built from forge:, fixer:, target.repo and
// the tools environment. Repo, StateDir, SandboxDir, Forge, Tools and Dial
// are required; zero limits take the fixer's defaults.
type FixConfig struct {
	Repo       fleet.Repo
	StateDir   string // <data_dir>/fixer: the fixer's state, the tx cache, poll/ and the tests' home/
	SandboxDir string // <data_dir>/qa-sandbox: one sandbox run per replay and per job
	Forge      fixer.Forge
	// Poster posts the fix stage's records (kind=needs-repro,
	// kind=resolution) as the fleet identity; nil: they are not posted.
	Poster    fixer.Poster
	Model     fleet.Model // the patch model; nil: draft PRs only
	ModelName string
	// Tools is the tools environment a repro is replayed in (the same
	// registry and fences as a probe) and each run is cleaned up with.
	Tools *qatools.Env
	// Log gives work items' entries their sender, block time and
	// transaction; nil: entries carry their index only.
	Log  *chain.FeedbackLog
	Dial fleet.DialSource // the dial gate of replays, read again before every push
	// Budget is a replay's budget (the fleet's budget:); its MaxTokens is
	// a job's when MaxTokens is zero.
	Budget    fleet.Budget
	MaxTokens int64         // a job's tokens (fixer.max_tokens)
	Deadline  time.Duration // a job's time (fixer.deadline); default 20 minutes

	Attempts          int
	MaxOpenPRs        int
	MaxPRsPerHour     int
	Cooldown          time.Duration
	TestTimeout       time.Duration
	RegressionTimeout time.Duration
	Logger            *slog.Logger

	// BisectCommits and BisectTimeout bound the cause bisection (the
	// fixer's defaults when zero; negative BisectCommits: none).
	BisectCommits int
	BisectTimeout time.Duration
}

// DefaultDeadline bounds a fix job when FixConfig.Deadline is zero.
const DefaultDeadline = 20 * time.Minute

// Fix is the fix pipeline: a fixer wired to the tools environment.
type Fix struct {
	cfg FixConfig
	f   *fixer.Fixer
}

// NewFix composes the fix pipeline: the reproducer over cfg.Tools, the
// tests' home under cfg.StateDir and the fixer. The error is the fixer's
// (a missing required value) or the home directory's.
func NewFix(ctx context.Context, cfg FixConfig) (*Fix, error) {
	if cfg.Tools == nil || cfg.Dial == nil || cfg.SandboxDir == "" {
		return nil, errors.New("fix pipeline: Tools, Dial and SandboxDir are required")
	}
	home := filepath.Join(cfg.StateDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	rep := &toolReproducer{tools: cfg.Tools, dial: cfg.Dial, sandboxDir: cfg.SandboxDir, budget: cfg.Budget}
	f, err := fixer.New(fixer.Config{
		Repo: cfg.Repo, StateDir: cfg.StateDir, Forge: cfg.Forge, Reproducer: rep, Poster: cfg.Poster,
		Model: cfg.Model, ModelName: cfg.ModelName, Dial: cfg.Dial,
		Attempts: cfg.Attempts, MaxOpenPRs: cfg.MaxOpenPRs, MaxPRsPerHour: cfg.MaxPRsPerHour, Cooldown: cfg.Cooldown,
		TestTimeout: cfg.TestTimeout, RegressionTimeout: cfg.RegressionTimeout,
		BisectCommits: cfg.BisectCommits, BisectTimeout: cfg.BisectTimeout,
		TestEnv: fixer.TestEnv(ctx, home), Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Fix{cfg: cfg, f: f}, nil
}

// Poll refreshes the open PRs from the forge, re-checks merged ones and
// posts kind=resolution when they hold (fixer.Fixer.Poll).
func (p *Fix) Poll(ctx context.Context) ([]fixer.PollResult, error) {
	return p.f.Poll(ctx, filepath.Join(p.cfg.StateDir, "poll"))
}

// Run runs one job on it in a sandbox run of its own, within the job's
// tokens and deadline; dryRun pushes nothing. The job is returned with
// the error when there is one; a failed cleanup of the run is joined to it.
func (p *Fix) Run(ctx context.Context, it fixer.Item, dryRun bool) (*fixer.Job, error) {
	b := fleet.Budget{MaxTokens: p.cfg.MaxTokens, Deadline: p.cfg.Deadline}
	if b.MaxTokens == 0 {
		b.MaxTokens = p.cfg.Budget.MaxTokens
	}
	if b.Deadline == 0 {
		b.Deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, b.Deadline)
	defer cancel()
	runID := sandbox.NewRunID(time.Now())
	sb, err := sandbox.Open(p.cfg.SandboxDir, runID)
	if err != nil {
		return nil, err
	}
	run := &qatools.Run{ID: runID, Source: "qa-fixer", Sandbox: sb, Meter: sandbox.NewMeter(b)}
	j, err := p.f.Fix(ctx, it, nil, fixer.JobOptions{Dir: filepath.Join(sb.JailDir(), "fix"), Meter: run.Meter, DryRun: dryRun})
	if cerr := qatools.CleanupRun(context.WithoutCancel(ctx), p.cfg.Tools, run); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return j, err
}

// RetryAfter is how long Next leaves a work item alone after a job on it
// ended without a PR (it failed, passed on base, was capped).
const RetryAfter = 6 * time.Hour

// Next picks, from items in rank order, the work item the daemon's fix
// pass takes: the highest-ranked one the repository owns that has no PR
// in flight (open, merged awaiting its re-check, closed within the
// cooldown), was not answered with needs-repro since its newest entry, and
// was not tried in the last RetryAfter. The error is the fixer's records'.
func (p *Fix) Next(items []triage.WorkItem, now time.Time) (triage.WorkItem, bool, error) {
	recs, err := p.f.Records()
	if err != nil {
		return triage.WorkItem{}, false, err
	}
	cooldown := p.cfg.Cooldown
	if cooldown <= 0 {
		cooldown = fixer.DefaultCooldown
	}
	wi, ok := nextWorkItem(items, recs, p.cfg.Repo, cooldown, now)
	return wi, ok, nil
}

// nextWorkItem is Next over the records.
func nextWorkItem(items []triage.WorkItem, recs []fixer.Record, repo fleet.Repo, cooldown time.Duration, now time.Time) (triage.WorkItem, bool) {
	byFP := map[string]fixer.Record{}
	for _, r := range recs {
		byFP[r.Fingerprint] = r
	}
	for _, wi := range items {
		if !repo.Owns(wi.Surface) {
			continue
		}
		r, seen := byFP[wi.ID]
		if !seen {
			return wi, true
		}
		latest := uint64(0)
		for _, e := range wi.Entries {
			latest = max(latest, e)
		}
		switch {
		case r.Active(): // its PR is open: `fleetd fix` updates it on demand
		case r.State == fixer.StateMerged && r.Recheck != fixer.RecheckResolved:
		case r.State == fixer.StateClosed && now.Sub(r.ClosedAt) < cooldown:
		case r.NeedsRepro != nil && *r.NeedsRepro >= latest:
		case !r.LastRunAt.IsZero() && now.Sub(r.LastRunAt) < RetryAfter:
		default:
			return wi, true
		}
	}
	return triage.WorkItem{}, false
}
