package qatools

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// benchEnv is a chain-free Env: the compile and fetch tools need no chain.
func benchEnv(b *testing.B) (*Env, *Run, *fleet.Registry, string, *httptest.Server) {
	b.Helper()
	dir := b.TempDir()
	compiler := filepath.Join(dir, "cc.sh")
	if err := os.WriteFile(compiler, []byte(fakeCompiler), 0o755); err != nil {
		b.Fatal(err)
	}
	web := httptest.NewServer(platformHandler())
	b.Cleanup(web.Close)
	u, _ := url.Parse(web.URL)
	allow, _ := NewAllowlist([]string{u.Host})
	env := &Env{Target: fleet.Target{Compiler: []string{"/bin/sh", compiler, "{src}"}, FetchAllow: []string{u.Host}}, Fetcher: NewFetcher(allow, 5*time.Second, 64<<10)}
	sb, err := sandbox.Open(filepath.Join(dir, "sb"), "r-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sb.Abandon)
	run := &Run{ID: "r-bench", Source: "qa-bench", Sandbox: sb, Meter: sandbox.NewMeter(fleet.Budget{})}
	reg, err := NewRegistry(env, run)
	if err != nil {
		b.Fatal(err)
	}
	return env, run, reg, compiler, web
}

const benchSource = "let x = 1 + 2;\nprint x;\n"

// BenchmarkCompileDirect runs the compiler the way a shell would.
func BenchmarkCompileDirect(b *testing.B) {
	_, _, _, compiler, _ := benchEnv(b)
	src := filepath.Join(b.TempDir(), "a.src")
	os.WriteFile(src, []byte(benchSource), 0o600)
	for b.Loop() {
		if out, err := exec.Command("/bin/sh", compiler, src).Output(); err != nil || len(out) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileTool runs the same compiler through qa_compile's whole
// path: dial gate, validation, the jail write, bounded exec with rlimits and
// a process group, classification and hashing.
func BenchmarkCompileTool(b *testing.B) {
	_, _, reg, _, _ := benchEnv(b)
	args, _ := json.Marshal(map[string]string{"source": benchSource})
	b.ReportAllocs()
	for b.Loop() {
		out, err := reg.Dispatch(context.Background(), fleetDial(fleet.Observe), "qa_compile", args)
		if err != nil || out.Result["outcome"] != Compiled {
			b.Fatal(err, out.Result)
		}
	}
}

// BenchmarkFetchDirect is a plain http.Get of a face.
func BenchmarkFetchDirect(b *testing.B) {
	_, _, _, _, web := benchEnv(b)
	for b.Loop() {
		resp, err := http.Get(web.URL + "/alice/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkFetchTool is the same GET through qa_fetch: allowlist, the
// checked dialer, body cap, hashing and the result map.
func BenchmarkFetchTool(b *testing.B) {
	_, _, reg, _, web := benchEnv(b)
	args, _ := json.Marshal(map[string]string{"url": web.URL + "/alice/"})
	b.ReportAllocs()
	for b.Loop() {
		out, err := reg.Dispatch(context.Background(), fleetDial(fleet.Observe), "qa_fetch", args)
		if err != nil || out.Result["status"] != 200 {
			b.Fatal(err, out.Result)
		}
	}
}

// BenchmarkSandboxOpenClose is the cost of a run's jail: directories, lock,
// os.Root, the empty ledger (fsynced) and the closed marker (fsynced).
func BenchmarkSandboxOpenClose(b *testing.B) {
	base := b.TempDir()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		sb, err := sandbox.Open(base, "r-"+itoa(n))
		if err != nil {
			b.Fatal(err)
		}
		if err := sb.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

type fleetDial fleet.Dial

func (d fleetDial) Dial() (fleet.Dial, error) { return fleet.Dial(d), nil }

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
