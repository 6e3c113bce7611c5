package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// Compiler runs the compiler (argv, target.compiler: {src} and {out} stand
// for the source and output paths) on one corpus program inside a
// throwaway jail under sandboxDir, bounded like qa_compile (timeout,
// tools.compile_timeout; 0: 10s), and removes the jail after.
func Compiler(ctx context.Context, sandboxDir string, argv []string, source string, timeout time.Duration) Check {
	c := Check{Name: "compiler"}
	sb, err := sandbox.Open(sandboxDir, "doctor-"+sandbox.NewRunID(time.Now()))
	if err != nil {
		c.Fatal = true
		c.Detail = err.Error()
		c.Fix = "make the data dir writable"
		return c
	}
	defer func() {
		sb.Close()
		os.RemoveAll(sb.Dir())
	}()
	const src = "src/input.src"
	if err := sb.WriteFile(src, []byte(source)); err != nil {
		c.Detail = err.Error()
		return c
	}
	if err := sb.Root().MkdirAll("out", 0o700); err != nil {
		c.Detail = err.Error()
		return c
	}
	args := make([]string, len(argv))
	for i, s := range argv {
		s = strings.ReplaceAll(s, "{src}", filepath.Join(sb.JailDir(), src))
		args[i] = strings.ReplaceAll(s, "{out}", filepath.Join(sb.JailDir(), "out", "output.bin"))
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: args, Dir: sb.JailDir(), Timeout: timeout})
	switch {
	case err != nil:
		c.Fatal = true
		c.Detail = fmt.Sprintf("%s does not run: %v", argv[0], err)
		c.Fix = "fix target.compiler (a relative path resolves against the config file; a bare name is looked up in PATH)"
	case res.TimedOut:
		c.Detail = fmt.Sprintf("%s did not finish a known-good corpus program within tools.compile_timeout (%s)", argv[0], timeout)
		c.Fix = "raise tools.compile_timeout, or check the compiler"
	case res.ExitCode != 0 || res.Signal != "":
		tail, _ := sandbox.Text(res.Stderr, 200)
		c.Detail = fmt.Sprintf("%s failed on the first corpus program (exit %d%s): %s", argv[0], res.ExitCode, sigNote(res.Signal), strings.TrimSpace(tail))
		c.Fix = "check target.compiler's arguments ({src} is the source path) and that target.corpus holds programs it accepts"
	default:
		c.OK = true
		c.Detail = fmt.Sprintf("%s compiled the first corpus program in the jail in %s", argv[0], res.Duration.Round(time.Millisecond))
	}
	return c
}

func sigNote(sig string) string {
	if sig == "" {
		return ""
	}
	return ", signal " + sig
}
