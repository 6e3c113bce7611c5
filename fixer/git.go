package fixer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// gitTimeout bounds one git command; fetch and push of a big repository
// over a slow link are the longest.
const gitTimeout = 5 * time.Minute

// GitEnv is the environment every git command runs with: nothing from the
// user's or the system's git configuration (no hooks, credential helpers or
// aliases), no prompts, a fixed identity for fleetd's commits, and the
// process's PATH. extra is appended (a forge's auth header config).
func GitEnv(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		"LANG=C",
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=fleetd",
		"GIT_AUTHOR_EMAIL=fleetd@localhost",
		"GIT_COMMITTER_NAME=fleetd",
		"GIT_COMMITTER_EMAIL=fleetd@localhost",
		"GIT_ASKPASS=/bin/false",
		"SSH_ASKPASS=/bin/false",
	}
	return append(env, extra...)
}

// Git runs git with args in dir (GitEnv plus extra) and returns its
// standard output, trimmed. The error quotes the command and the tail of
// its standard error; callers must not put secrets in args (use extra).
func Git(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = GitEnv(extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %w: %s", gitArgs(args), err, tailText(errb.String(), 600))
	}
	return strings.TrimSpace(out.String()), nil
}

// gitArgs names a git command in errors: the subcommand and its flags,
// without long values.
func gitArgs(args []string) string {
	var parts []string
	for _, a := range args {
		if len(a) > 80 {
			a = a[:77] + "..."
		}
		parts = append(parts, a)
		if len(parts) == 4 {
			break
		}
	}
	return strings.Join(parts, " ")
}

// tailText returns the last n bytes of s, trimmed, on a rune boundary.
func tailText(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < 4; i++ {
		if s[i]&0xC0 != 0x80 {
			return "…" + s[i:]
		}
	}
	return "…" + s
}

// EnsureBare makes gitDir a bare repository if it is not one yet.
func EnsureBare(ctx context.Context, gitDir string) error {
	if _, err := os.Stat(gitDir + "/HEAD"); err == nil {
		return nil
	}
	if err := os.MkdirAll(gitDir, 0o700); err != nil {
		return fmt.Errorf("repository cache: %w", err)
	}
	_, err := Git(ctx, gitDir, nil, "init", "--quiet", "--bare")
	return err
}
