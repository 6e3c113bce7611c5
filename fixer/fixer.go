package fixer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// Item is one work item: a triage cluster from trusted senders, open or
// regressed, with a repro (triage.WorkItems; cmd converts). Its text came
// from the log and is untrusted data.
type Item struct {
	ID       string         `json:"id"` // the cluster id, a fingerprint: one PR per ID
	Title    string         `json:"title"`
	Severity fleet.Severity `json:"severity"`
	Surface  fleet.Surface  `json:"surface"`
	Repro    fleet.Repro    `json:"repro"`
	Sources  []string       `json:"sources,omitempty"`
	// Entries are the cluster's on-chain entries, for the PR body.
	Entries []Entry `json:"entries,omitempty"`
	// Latest is the newest entry index of the cluster: kind=needs-repro is
	// posted once per Latest.
	Latest uint64 `json:"latest"`
}

// Entry is one on-chain record of a finding.
type Entry struct {
	Index  uint64        `json:"index"`
	Sender fleet.Address `json:"sender"`
	Time   time.Time     `json:"time"`         // block time
	Tx     string        `json:"tx,omitempty"` // 0x hash; empty when the node no longer has the log
}

// Reproducer replays a repro. Package pipeline's runs the tool in a fresh
// sandbox run with the same tools and fences as a probe. With an error,
// a Reproduction that names its run (RunID) is what the errored replay
// returned: the call's error and result and what it left on the
// platform; the reproduce stage keeps it in the job.
type Reproducer interface {
	Reproduce(ctx context.Context, r fleet.Repro) (Reproduction, error)
}

// Reproduction is what replaying a repro showed.
type Reproduction struct {
	Reproduced bool   `json:"reproduced"`
	Outcome    string `json:"outcome"`          // the tool's own word: crashed, timeout, rejected, ...
	Detail     string `json:"detail,omitempty"` // output tail: untrusted
	RunID      string `json:"run_id,omitempty"`
	// Input is what the repro feeds the system under test (qa_compile's
	// source); a regression test holds it. HasInput is false for tools
	// whose repro has no single input.
	Input    []byte `json:"input,omitempty"`
	HasInput bool   `json:"has_input"`
	// Test is the standalone reproducer test the replay returned (a
	// generated fuzz harness's crash: qa_fuzz harness=… replay=…), when it
	// returned one. The regression stage commits it as the regression
	// test in place of a corpus file: it holds the harness and the input.
	Test *ReproTest `json:"test,omitempty"`
	// Error is the replay call's error when it erred (the tool answered
	// ok false, or the call was cut short: the budget spent, cancelled);
	// Result is then what the call returned, whole (qa_authz's written,
	// undone and left_on_platform with it).
	Error  string       `json:"error,omitempty"`
	Result fleet.Result `json:"result,omitempty"`
	// LeftOnPlatform is what the replay wrote to the platform and could
	// not undo (its result's left_on_platform, fleet.ResultLeftOnPlatform),
	// whether or not it erred: qa_authz's fresh identities' accounts at
	// least.
	LeftOnPlatform []string `json:"left_on_platform,omitempty"`
}

// ReproTest is a reproducer _test.go file: where it goes in the
// repository (slash-separated, relative to the module root) and its
// bytes.
type ReproTest struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
}

// Poster appends a record to the feedback log as the fleet identity (in
// fleetd, through package poster's outbox) and returns its index, or nil
// when the record is acknowledged without one: queued to be posted when the
// log answers, or already on the log. An error means it was not accepted.
type Poster interface {
	Post(ctx context.Context, f fleet.Finding) (*uint64, error)
}

// Config configures a Fixer. Repo, StateDir, Forge and Reproducer are
// required; zero limits take the defaults.
type Config struct {
	Repo       fleet.Repo
	StateDir   string // <data_dir>/fixer
	Forge      Forge
	Reproducer Reproducer
	Poster     Poster      // nil: needs-repro and resolution records are not posted
	Model      fleet.Model // nil: no patches, draft PRs only
	ModelName  string
	// Dial is read before every push: below propose nothing is pushed.
	Dial          fleet.DialSource
	Attempts      int           // patch attempts; default 3
	MaxOpenPRs    int           // default 5
	MaxPRsPerHour int           // default 2
	Cooldown      time.Duration // after a PR closed unmerged; default 7 days
	// TestTimeout bounds the repository's test command; RegressionTimeout
	// the regression test. Defaults 10 minutes and 2 minutes.
	TestTimeout       time.Duration
	RegressionTimeout time.Duration
	// BisectCommits bounds the cause bisection to that many commits of the
	// base branch's first-parent history before base (default
	// DefaultBisectCommits; negative: no bisection); BisectTimeout bounds
	// its time (default DefaultBisectTimeout).
	BisectCommits int
	BisectTimeout time.Duration
	// TestEnv is the complete environment of test commands (PATH, HOME,
	// GOCACHE, ...): nothing else is inherited.
	TestEnv []string
	Source  string // the records' source=; default qa-fixer
	Logger  *slog.Logger
	Now     func() time.Time
}

// The defaults of Config's limits.
const (
	DefaultAttempts          = 3
	DefaultMaxOpenPRs        = 5
	DefaultMaxPRsPerHour     = 2
	DefaultCooldown          = 7 * 24 * time.Hour
	DefaultTestTimeout       = 10 * time.Minute
	DefaultRegressionTimeout = 2 * time.Minute
)

// Fixer runs fix jobs and polls their PRs.
type Fixer struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns a Fixer.
func New(cfg Config) (*Fixer, error) {
	switch {
	case cfg.StateDir == "":
		return nil, errors.New("fixer: no state dir")
	case cfg.Forge == nil:
		return nil, errors.New("fixer: no forge")
	case cfg.Reproducer == nil:
		return nil, errors.New("fixer: no reproducer")
	}
	if err := cfg.Repo.Validate("target.repo"); err != nil {
		return nil, err
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.MaxOpenPRs <= 0 {
		cfg.MaxOpenPRs = DefaultMaxOpenPRs
	}
	if cfg.MaxPRsPerHour <= 0 {
		cfg.MaxPRsPerHour = DefaultMaxPRsPerHour
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCooldown
	}
	if cfg.TestTimeout <= 0 {
		cfg.TestTimeout = DefaultTestTimeout
	}
	if cfg.RegressionTimeout <= 0 {
		cfg.RegressionTimeout = DefaultRegressionTimeout
	}
	if cfg.BisectCommits == 0 {
		cfg.BisectCommits = DefaultBisectCommits
	}
	if cfg.BisectTimeout <= 0 {
		cfg.BisectTimeout = DefaultBisectTimeout
	}
	if cfg.Source == "" {
		cfg.Source = "qa-fixer"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Fixer{cfg: cfg, log: log.With("component", "fixer")}, nil
}

// Records returns what fleetd knows about its PRs (prs.json), without
// asking the forge.
func (f *Fixer) Records() ([]Record, error) { return LoadRecords(f.cfg.StateDir) }

// ErrBusy is returned when another fix job or poll holds the state lock.
var ErrBusy = errors.New("another fix job is running (the state lock is held)")

// ErrDial is wrapped when the dial is below propose at push time.
var ErrDial = errors.New("refused: the fix stage pushes branches and opens PRs only at dial propose")

// Job outcomes.
const (
	OutcomeNeedsRepro    = "needs-repro"     // the repro did not reproduce
	OutcomeNoInput       = "no-input"        // the repro has no input a regression test can hold
	OutcomePassesOnBase  = "passes-on-base"  // the regression test passes on the base branch
	OutcomeOpened        = "opened"          // a new PR
	OutcomeUpdated       = "updated"         // the fingerprint's PR, force-pushed and edited
	OutcomeMerged        = "already-merged"  // its PR is merged: Poll re-checks it
	OutcomeCooldown      = "cooldown"        // its PR was closed unmerged recently
	OutcomeCapOpen       = "capped-open"     // max_open_prs reached
	OutcomeCapHour       = "capped-per-hour" // max_prs_per_hour reached
	OutcomeDryRun        = "dry-run"         // everything but push and PR
	OutcomeFailed        = "failed"          // an error ended the job
	verificationVerified = "verified"
)

// Job is one fix attempt on one work item; stages fill it in. It is
// written to <state>/jobs/<fp>/<id>.json when the job ends.
type Job struct {
	ID      string    `json:"id"`
	Item    Item      `json:"item"`
	Started time.Time `json:"started"`
	// Dir is the job's workspace, inside its sandbox jail; the worktree
	// is Dir/work.
	Dir    string      `json:"dir"`
	DryRun bool        `json:"dry_run,omitempty"`
	Meter  fleet.Meter `json:"-"`

	Repro      *Reproduction   `json:"repro,omitempty"`
	Base       string          `json:"base,omitempty"` // base commit
	Regression *RegressionTest `json:"regression,omitempty"`
	// RegressionCommit is base plus the regression test.
	RegressionCommit string      `json:"regression_commit,omitempty"`
	Before           *CommandLog `json:"before,omitempty"` // the regression test on base: fails
	Grounded         []string    `json:"grounded,omitempty"`
	Attempts         []Attempt   `json:"attempts,omitempty"`
	Verified         bool        `json:"verified"`
	After            *CommandLog `json:"after,omitempty"` // the regression test with the patch
	Suite            *CommandLog `json:"suite,omitempty"` // the test command with the patch
	Commit           string      `json:"commit,omitempty"`
	PR               *PR         `json:"pr,omitempty"`
	Outcome          string      `json:"outcome,omitempty"`
	Error            string      `json:"error,omitempty"`
	// Timings per phase: reproduce, regression, patch (model calls),
	// verify (applying and testing patches), forge (push and PR).
	Timings map[string]time.Duration `json:"timings"`

	// Bisect is the search of base's history for the commit that
	// introduced the finding (BisectStage).
	Bisect *Bisection `json:"bisect,omitempty"`

	worktree string
}

// CommandLog is one command a job ran and how it ended.
type CommandLog struct {
	Argv     []string      `json:"argv"`
	ExitCode int           `json:"exit_code"`
	TimedOut bool          `json:"timed_out,omitempty"`
	Duration time.Duration `json:"duration"`
	Output   string        `json:"output"` // trimmed
}

// Attempt is one patch the model proposed and what became of it.
type Attempt struct {
	N           int           `json:"n"`
	Diff        string        `json:"diff,omitempty"`
	Explanation string        `json:"explanation,omitempty"`
	Files       []string      `json:"files,omitempty"`
	Result      string        `json:"result"` // verified, refused, bad-diff, apply-failed, still-fails, suite-fails, no-patch, model-error, budget
	Detail      string        `json:"detail,omitempty"`
	Tokens      int64         `json:"tokens,omitempty"`
	Duration    time.Duration `json:"duration"`
}

func (j *Job) time(phase string, start time.Time) {
	if j.Timings == nil {
		j.Timings = map[string]time.Duration{}
	}
	j.Timings[phase] += time.Since(start)
}

// errStop ends a pipeline early without an error: the job's Outcome says why.
var errStop = errors.New("stop")

// Stage is one step of a fix job.
type Stage interface {
	Name() string
	Run(ctx context.Context, j *Job) error
}

// Pipeline is the stages of a job, run in order until one stops it.
type Pipeline []Stage

// Run runs the stages; a stage ending the job early (an Outcome set) is
// not an error.
func (p Pipeline) Run(ctx context.Context, j *Job) error {
	for _, s := range p {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.Run(ctx, j); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return fmt.Errorf("%s: %w", s.Name(), err)
		}
	}
	return nil
}

// Stages returns the standard pipeline: Reproduce, Regression, Bisect,
// Patch, Publish.
func (f *Fixer) Stages() Pipeline {
	return Pipeline{ReproduceStage{f}, RegressionStage{f}, BisectStage{f}, PatchStage{f}, PublishStage{f}}
}

// JobOptions are the per-job inputs cmd supplies.
type JobOptions struct {
	// Dir is the job's workspace: a directory inside the job's sandbox
	// jail, created if missing.
	Dir string
	// Meter counts the model's tokens and holds the deadline (nil: none).
	Meter  fleet.Meter
	DryRun bool
}

// Fix runs pipeline p (nil: Stages) on item. It holds the state lock for
// the whole job (ErrBusy when another holds it), removes the worktree when
// done, writes the job record and updates the fingerprint's Record. The
// Job is returned even with an error.
func (f *Fixer) Fix(ctx context.Context, item Item, p Pipeline, o JobOptions) (*Job, error) {
	if item.ID == "" {
		return nil, errors.New("fix: work item without an id")
	}
	if !f.cfg.Repo.Owns(item.Surface) {
		return nil, fmt.Errorf("fix %s: target.repo does not own surface %q (target.repo.surfaces)", item.ID, item.Surface)
	}
	unlock, err := lockState(f.cfg.StateDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if p == nil {
		p = f.Stages()
	}
	j := &Job{ID: jobID(f.cfg.Now()), Item: item, Started: f.cfg.Now().UTC(), Dir: o.Dir, DryRun: o.DryRun, Meter: o.Meter, Timings: map[string]time.Duration{}}
	if j.Dir == "" {
		return nil, errors.New("fix: no job directory")
	}
	if err := os.MkdirAll(j.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("fix: %w", err)
	}
	if j.Outcome, err = f.gate(item.ID, o.DryRun); err == nil && j.Outcome == "" {
		err = p.Run(ctx, j)
	}
	f.removeWorktree(context.WithoutCancel(ctx), j)
	if err != nil {
		j.Outcome, j.Error = OutcomeFailed, err.Error()
	}
	if _, uerr := updateRecord(f.cfg.StateDir, item.ID, func(r *Record) {
		fillRecord(r, item)
		r.LastJob, r.LastOutcome, r.LastError, r.LastRunAt = j.ID, j.Outcome, j.Error, f.cfg.Now().UTC()
	}); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if werr := f.writeJob(j); werr != nil {
		err = errors.Join(err, werr)
	}
	f.log.Info("fix job ended", "fingerprint", item.ID, "job", j.ID, "outcome", j.Outcome, "err", j.Error)
	return j, err
}

// gate ends a job before it starts when its PR's state says so: closed
// unmerged within Cooldown (not reopened), or merged and not yet
// re-checked (Poll's turn). A dry run always runs.
func (f *Fixer) gate(fp string, dryRun bool) (string, error) {
	if dryRun {
		return "", nil
	}
	recs, err := LoadRecords(f.cfg.StateDir)
	if err != nil {
		return "", err
	}
	rec, ok := findRecord(recs, fp)
	switch {
	case !ok:
	case rec.State == StateClosed && f.cfg.Now().Sub(rec.ClosedAt) < f.cfg.Cooldown:
		return OutcomeCooldown, nil
	case rec.State == StateMerged && rec.Recheck == "":
		return OutcomeMerged, nil
	}
	return "", nil
}

func fillRecord(r *Record, it Item) {
	r.Title = Inline(it.Title, 200)
	r.Severity, r.Surface = it.Severity, it.Surface
}

// jobID is a sortable, unique job name.
func jobID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "fix-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// writeJob records the job as JSON under jobs/<fp>/.
func (f *Fixer) writeJob(j *Job) error {
	dir := filepath.Join(f.cfg.StateDir, "jobs", j.Item.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("job record: %w", err)
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("job record: %w", err)
	}
	return fleet.WriteFileAtomic(filepath.Join(dir, j.ID+".json"), append(b, '\n'), 0o600)
}

// gitDir is the bare clone every job's worktree comes from.
func (f *Fixer) gitDir() string { return filepath.Join(f.cfg.StateDir, "repo.git") }

// removeWorktree removes the job's worktree, if it has one.
func (f *Fixer) removeWorktree(ctx context.Context, j *Job) {
	if j.worktree == "" {
		return
	}
	if _, err := Git(ctx, f.gitDir(), nil, "worktree", "remove", "--force", j.worktree); err != nil {
		f.log.Warn("remove worktree", "dir", j.worktree, "err", err)
		os.RemoveAll(j.worktree)
	}
	Git(ctx, f.gitDir(), nil, "worktree", "prune")
	j.worktree = ""
}

// CommandResult is how one bounded command ended.
type CommandResult struct {
	ExitCode int
	TimedOut bool
	Output   []byte // stdout then stderr, capped
	Duration time.Duration
}

// outputCap bounds what a test command's output keeps per stream.
const outputCap = 256 << 10

// run runs argv in dir bounded by timeout (its process group killed after
// it), with the configured test environment and nothing else.
func (f *Fixer) run(ctx context.Context, dir string, argv []string, timeout time.Duration) (CommandResult, error) {
	env := f.cfg.TestEnv
	if env == nil {
		env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: argv, Dir: dir, Timeout: timeout, OutputCap: outputCap, Env: env, MemoryBytes: 16 << 30})
	if err != nil {
		return CommandResult{}, err
	}
	out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
	return CommandResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: out, Duration: res.Duration}, nil
}

// logOf turns a command result into a trimmed log.
func logOf(argv []string, r CommandResult) *CommandLog {
	return &CommandLog{Argv: argv, ExitCode: r.ExitCode, TimedOut: r.TimedOut, Duration: r.Duration, Output: tailText(string(r.Output), 6000)}
}

// TestEnv returns an environment for a repository's test commands: this
// process's PATH, HOME and TMPDIR set to home, the Go toolchain's caches
// (GOCACHE, GOMODCACHE, GOPATH as `go env` reports them, so tests do not
// rebuild the world), GOTOOLCHAIN=local (no toolchain downloads), and
// extra. Nothing else of this process's environment is passed on: no
// tokens, no keys.
func TestEnv(ctx context.Context, home string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8", "GOTOOLCHAIN=local"}
	cmd := exec.CommandContext(ctx, "go", "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS")
	if out, err := cmd.Output(); err == nil {
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
			if i < len(lines) && lines[i] != "" {
				env = append(env, k+"="+lines[i])
			}
		}
	}
	return append(env, extra...)
}
