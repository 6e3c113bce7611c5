package qatools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/sandbox"
)

type compileArgs struct {
	Source string `json:"source,omitempty" desc:"program source text (this or source_base64)" maxlen:"1048576"`
	// SourceBase64 carries a source that is not UTF-8 text (a binary input
	// a fuzz engine found): JSON strings cannot hold arbitrary bytes.
	SourceBase64 string `json:"source_base64,omitempty" desc:"the source as base64, for inputs that are not UTF-8 text (this or source)" maxlen:"1398104"`
	// TimeoutMS lets a caller minimizing a hang spend less than the
	// configured timeout per candidate; it can only shorten it.
	TimeoutMS int `json:"timeout_ms,omitempty" desc:"optional: a timeout in milliseconds shorter than the configured compile timeout (e.g. while minimizing a hang); ignored when 0 or longer"`
}

// source is the program to compile: source or source_base64, exactly one
// (an empty source is a program too, so neither means "").
func (a compileArgs) source() (string, error) {
	switch {
	case a.Source != "" && a.SourceBase64 != "":
		return "", fmt.Errorf("give source or source_base64, not both")
	case a.SourceBase64 != "":
		b, err := base64.StdEncoding.DecodeString(a.SourceBase64)
		if err != nil {
			return "", fmt.Errorf("source_base64 is not base64: %v", err)
		}
		return string(b), nil
	}
	return a.Source, nil
}

// Compile outcomes (DESIGN.md §5, plus resource): see fuzzing.Classify.
const (
	Compiled = fuzzing.Compiled // exit 0
	Rejected = fuzzing.Rejected // a clean error: non-zero exit, no crash signature
	Crashed  = fuzzing.Crashed  // a panic, a fatal signal or a sanitizer report
	TimedOut = fuzzing.TimedOut // a hang: killed at the timeout or by the CPU rlimit
	Resource = fuzzing.Resource // out of memory under the address-space limit
)

// Output sizes in a qa_compile result. A Go panic's message and top frames
// come first on stderr and a deep stack can be long, so the result keeps
// the head as well as the tail; the crash state is read from all of it.
const (
	stderrHeadBytes = 4096
	stderrTailBytes = 2048
)

// compiled is what one compiler run produced.
type compiled struct {
	fields   map[string]any
	outcome  string
	artifact []byte
}

// runCompiler writes source into the jail and runs the target's compiler on
// it: {src} in the argv becomes the source's absolute path in the jail, {out}
// (optional) an output path there; without {out} the artifact is stdout.
func (t *tools) runCompiler(ctx context.Context, source string) (*compiled, error) {
	return t.runCompilerFor(ctx, source, 0)
}

// runCompilerFor is runCompiler with a timeout, which only shortens the
// configured one (0: the configured one).
func (t *tools) runCompilerFor(ctx context.Context, source string, timeout time.Duration) (*compiled, error) {
	argv := t.env.Target.Compiler
	if len(argv) == 0 {
		return nil, fmt.Errorf("target.compiler is not configured")
	}
	if len(source) > t.env.Limits.MaxSource {
		return nil, fmt.Errorf("source is %d bytes, more than the %d-byte limit", len(source), t.env.Limits.MaxSource)
	}
	if timeout <= 0 || timeout > t.env.Limits.CompileTimeout {
		timeout = t.env.Limits.CompileTimeout
	}
	sb := t.run.Sandbox
	// One path per run, rewritten in place: a run's tool calls are
	// sequential, the run record keeps every source, and creating a file per
	// compile costs ~0.7 ms on ext4 against ~15 µs for a rewrite.
	const src, out = "src/input.src", "out/output.bin"
	if err := sb.WriteFile(src, []byte(source)); err != nil {
		return nil, err
	}
	usesOut := false
	args := make([]string, len(argv))
	for i, a := range argv {
		usesOut = usesOut || strings.Contains(a, "{out}")
		a = strings.ReplaceAll(a, "{src}", filepath.Join(sb.JailDir(), src))
		args[i] = strings.ReplaceAll(a, "{out}", filepath.Join(sb.JailDir(), out))
	}
	if usesOut {
		if err := sb.Root().MkdirAll("out", 0o700); err != nil {
			return nil, err
		}
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{
		Argv: args, Dir: sb.JailDir(), Timeout: timeout, OutputCap: sandbox.MaxFileBytes,
	})
	if err != nil {
		return nil, err
	}
	artifact := res.Stdout
	if usesOut && res.ExitCode == 0 {
		if artifact, err = sb.ReadFile(out); err != nil {
			artifact = nil
		}
	}
	stderrTail, tailCut := sandbox.Text(res.Stderr, stderrTailBytes)
	outcome := fuzzing.Classify(res)
	sum := sha256.Sum256(artifact)
	fields := map[string]any{
		"outcome":      outcome,
		"exit_code":    res.ExitCode,
		"signal":       res.Signal,
		"stderr_tail":  stderrTail,
		"bytes":        len(artifact),
		"sha256":       hex.EncodeToString(sum[:]),
		"duration_ms":  res.Duration.Milliseconds(),
		"truncated":    res.Truncated || tailCut,
		"source_bytes": len(source),
		"timeout_ms":   timeout.Milliseconds(),
	}
	if res.CPULimited {
		fields["cpu_limited"] = true
	}
	if len(res.Stderr) > stderrTailBytes {
		head := res.Stderr[:min(len(res.Stderr), stderrHeadBytes)]
		fields["stderr_head"], _ = sandbox.Text(head, stderrHeadBytes)
	}
	switch outcome {
	case TimedOut:
		// A hang has no stack to read: its state is the input's shape, so
		// minimizations of one hang that differ in spacing share it.
		fields["crash_state"] = "hang: " + fuzzing.Shape(source)
	case Crashed, Resource:
		st := fuzzing.ParseCrash(res.Stderr)
		if st.IsZero() {
			st = fuzzing.FallbackState(res.Signal, res.ExitCode)
		}
		fields["crash_state"] = st.String()
	}
	return &compiled{outcome: outcome, artifact: artifact, fields: fields}, nil
}

// compile: qa_compile. A crash or timeout is a successful probe (ok: true):
// the tool worked, the compiler did not.
func (t *tools) compile(ctx context.Context, a compileArgs) (fleet.Result, error) {
	src, err := a.source()
	if err != nil {
		return fleet.Fail("qa_compile: %v", err), nil
	}
	c, err := t.runCompilerFor(ctx, src, time.Duration(a.TimeoutMS)*time.Millisecond)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		return fleet.Fail("qa_compile: %v", err), nil
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err // cancelled, not a compiler timeout
	}
	return fleet.OK(c.fields), nil
}

// crashSignatures is what qa_call's hint looks for in a 5xx body.
var crashSignatures = fuzzing.CrashSignatures
