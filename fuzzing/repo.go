package fuzzing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// Repository copy limits: a fuzz session works on its own copy.
const (
	maxRepoFile  = 16 << 20
	maxRepoBytes = 512 << 20
)

// CheckoutRepo puts a working copy of a repository at dst (which must not
// exist): a local directory is copied (without .git, node_modules and
// files over 16 MiB; at most 512 MiB), anything else is cloned with
// `git clone --depth 1` (no prompts). Errors name the repository.
func CheckoutRepo(ctx context.Context, url, dst string) error {
	if info, err := os.Stat(url); err == nil && info.IsDir() {
		if err := copyTree(url, dst); err != nil {
			return fmt.Errorf("copy repository %s: %w", url, err)
		}
		return nil
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("clone repository %s: %w", url, err)
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{git, "clone", "--quiet", "--depth", "1", "--", url, dst},
		Dir: filepath.Dir(dst), Timeout: 5 * time.Minute, Env: gitEnv(filepath.Dir(dst))})
	if err != nil {
		return fmt.Errorf("clone repository %s: %w", url, err)
	}
	if res.ExitCode != 0 {
		tail, _ := sandbox.Text(res.Stderr, 400)
		return fmt.Errorf("clone repository %s: git exited %d: %s", url, res.ExitCode, tail)
	}
	return nil
}

func copyTree(src, dst string) error {
	total := int64(0)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and devices stay behind
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxRepoFile {
			return nil
		}
		if total += info.Size(); total > maxRepoBytes {
			return errors.New("repository larger than 512 MiB")
		}
		return copyFile(p, filepath.Join(dst, rel), info.Mode().Perm()|0o600)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// LoadSeeds reads up to max regular, non-hidden files of at most maxBytes
// from dir, by name (a target's corpus directory). "" returns nil.
func LoadSeeds(dir string, max, maxBytes int) ([][]byte, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("seed corpus %s: %w", dir, err)
	}
	var out [][]byte
	for _, e := range entries {
		if len(out) == max {
			break
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing (an engine shrinking its corpus)
		}
		if err != nil {
			return nil, fmt.Errorf("seed corpus: %w", err)
		}
		if len(b) > 0 && len(b) <= maxBytes {
			out = append(out, b)
		}
	}
	return out, nil
}

// GoCommand returns the go command to build fuzz targets with: the one on
// PATH, else the toolchain this binary was built with.
func GoCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("go fuzz: no go command on PATH")
	}
	return p, nil
}

// GoEnv is the environment for building and fuzzing a Go target: nothing
// inherited but the module proxy settings, caches under cacheDir (so runs
// are repeatable and need the network only for modules not yet cached), the
// local toolchain only, and a soft memory limit.
func GoEnv(goCmd, home, cacheDir string, memLimit uint64) []string {
	proxy := os.Getenv("GOPROXY")
	if proxy == "" {
		proxy = "https://proxy.golang.org"
	}
	// The module proxy is the only network a fuzz build may use: no
	// "direct" fetches from version control hosts.
	var keep []string
	for _, p := range strings.FieldsFunc(proxy, func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		keep = []string{"off"}
	}
	env := []string{
		"PATH=" + filepath.Dir(goCmd) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8",
		"GOCACHE=" + filepath.Join(cacheDir, "cache"),
		"GOMODCACHE=" + filepath.Join(cacheDir, "mod"),
		"GOPATH=" + filepath.Join(cacheDir, "path"),
		"GOPROXY=" + strings.Join(keep, ","),
		"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -modcacherw -buildvcs=false", "CGO_ENABLED=0",
		fmt.Sprintf("GOMEMLIMIT=%d", memLimit),
	}
	for _, k := range []string{"GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// gitEnv is the whole environment git runs with here: the system PATH, a
// home of its own and never a prompt for credentials.
func gitEnv(home string) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GIT_TERMINAL_PROMPT=0"}
}
