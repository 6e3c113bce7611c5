package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/qafleet/fleetd/pipeline"
)

// ForgeConfig is the `forge:` section: where the fix stage opens pull
// requests. Empty kind: no fix stage.
type ForgeConfig struct {
	Kind    string `yaml:"kind"`     // github or gitlocal
	BaseURL string `yaml:"base_url"` // github: the REST API root; default https://api.github.com/
	Owner   string `yaml:"owner"`
	Repo    string `yaml:"repo"`
	// Token (from ${ENV}) or TokenFile (mode 0600): never logged or recorded.
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token_file"`
}

// FixerConfig is the `fixer:` section: the fix stage's limits.
type FixerConfig struct {
	MaxOpenPRs        int           `yaml:"max_open_prs"`       // default 5
	MaxPRsPerHour     int           `yaml:"max_prs_per_hour"`   // default 2
	Attempts          int           `yaml:"attempts"`           // patch attempts; default 3
	Cooldown          time.Duration `yaml:"cooldown"`           // after a PR closed unmerged; default 168h
	Every             time.Duration `yaml:"every"`              // the daemon's fix pass; default 10m
	Planner           string        `yaml:"planner"`            // "", gemini or openai; "": drafts only
	MaxTokens         int64         `yaml:"max_tokens"`         // per job; default budget.max_tokens
	Deadline          time.Duration `yaml:"deadline"`           // per job; default 20m
	TestTimeout       time.Duration `yaml:"test_timeout"`       // the repository's test command; default 10m
	RegressionTimeout time.Duration `yaml:"regression_timeout"` // the regression test; default 2m

	// BisectCommits bounds the cause bisection (commits of the base
	// branch's history before base; default 64, negative: no bisection);
	// BisectTimeout its time (default 10m).
	BisectCommits int           `yaml:"bisect_commits"`
	BisectTimeout time.Duration `yaml:"bisect_timeout"`
}

// validateFixStage checks forge: and fixer:; errors name the field.
func (c *Config) validateFixStage() []error {
	var errs []error
	fc := c.Forge
	switch fc.Kind {
	case "":
		if fc.Owner != "" || fc.Repo != "" || fc.Token != "" || fc.TokenFile != "" || fc.BaseURL != "" {
			errs = append(errs, errors.New("forge.kind: required when other forge keys are set (github or gitlocal)"))
		}
	case pipeline.ForgeGitHub:
		if fc.Owner == "" {
			errs = append(errs, errors.New("forge.owner: required for kind github"))
		}
		if fc.Repo == "" {
			errs = append(errs, errors.New("forge.repo: required for kind github"))
		}
		switch {
		case fc.Token == "" && fc.TokenFile == "":
			errs = append(errs, errors.New("forge.token: required for kind github (or forge.token_file)"))
		case fc.Token != "" && fc.TokenFile != "":
			errs = append(errs, errors.New("forge.token_file: set forge.token or forge.token_file, not both"))
		}
		if fc.BaseURL != "" {
			if u, err := url.Parse(fc.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("forge.base_url: %q is not an http(s) URL", fc.BaseURL))
			}
		}
	case pipeline.ForgeGitLocal:
		if fc.Owner != "" || fc.Repo != "" || fc.Token != "" || fc.TokenFile != "" || fc.BaseURL != "" {
			errs = append(errs, errors.New("forge: kind gitlocal uses target.repo.url (a local repository) and no other forge keys"))
		}
	default:
		errs = append(errs, fmt.Errorf("forge.kind: %q: want github or gitlocal", fc.Kind))
	}
	if fc.Kind != "" && (c.Target == nil || c.Target.Repo == nil) {
		errs = append(errs, errors.New("forge: needs target.repo (the repository the fix stage repairs)"))
	}
	if fc.Kind == pipeline.ForgeGitLocal && c.Target != nil && c.Target.Repo != nil && !isLocalRepo(c.Target.Repo.URL) {
		errs = append(errs, fmt.Errorf("target.repo.url: %q is not a local directory, which forge kind gitlocal needs", c.Target.Repo.URL))
	}
	x := c.Fixer
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"max_open_prs", x.MaxOpenPRs < 0}, {"max_prs_per_hour", x.MaxPRsPerHour < 0}, {"attempts", x.Attempts < 0},
		{"cooldown", x.Cooldown < 0}, {"every", x.Every < 0}, {"max_tokens", x.MaxTokens < 0}, {"deadline", x.Deadline < 0},
		{"test_timeout", x.TestTimeout < 0}, {"regression_timeout", x.RegressionTimeout < 0},
		{"bisect_timeout", x.BisectTimeout < 0},
	} {
		if f.bad {
			errs = append(errs, fmt.Errorf("fixer.%s: must not be negative", f.name))
		}
	}
	switch x.Planner {
	case "", "gemini", "openai":
	default:
		errs = append(errs, fmt.Errorf("fixer.planner: %q: want gemini, openai, or empty for drafts without a model", x.Planner))
	}
	return errs
}

// forgeToken returns the forge token: forge.token, or the content of
// forge.token_file, which must not be readable by others. Errors never
// carry the token.
func (c *Config) forgeToken() (string, error) {
	if c.Forge.Token != "" {
		return c.Forge.Token, nil
	}
	p := c.resolve(c.Forge.TokenFile)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("forge.token_file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("forge.token_file: %s is mode %o; it must not be readable by others (chmod 600)", p, fi.Mode().Perm())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("forge.token_file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \n\r\t") {
		return "", fmt.Errorf("forge.token_file: %s does not hold one token", p)
	}
	return tok, nil
}
