package gitlocal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fixer/gitlocal"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
)

// BenchmarkFixJob times a fix job on the testbed compiler's panic, from
// the start of the job to an open PR on the local forge, split into
// reproduce / regression / patch / verify / forge (ms per job):
//   - verified: a scripted model proposes the right patch; the PR is ready
//     (cmd/fleetd's BenchmarkFixCommand drives the OpenAI adapter against
//     a wire-true fake instead);
//   - draft: no model; the PR is a draft with the regression test.
//
// Every job opens a new PR (a new fingerprint each time).
func BenchmarkFixJob(b *testing.B) {
	for _, mode := range []string{"verified", "draft"} {
		b.Run(mode, func(b *testing.B) {
			fixertest.HaveGo(b)
			repo := fixertest.CompilerRepo(b)
			forge, err := gitlocal.New(context.Background(), repo)
			if err != nil {
				b.Fatal(err)
			}
			var model fleet.Model
			if mode == "verified" {
				model = patchModel(fixertest.CorrectPatch(b))
			}
			f, err := fixer.New(fixer.Config{
				Repo: fixertest.CompilerRepoConfig(repo), StateDir: filepath.Join(b.TempDir(), "fixer"), Forge: forge,
				Reproducer: &fixertest.Reproducer{}, Poster: &fixertest.Poster{}, Model: model, Dial: fleettest.Dial(fleet.Propose),
				MaxOpenPRs: 1 << 20, MaxPRsPerHour: 1 << 20, TestEnv: fixertest.TestEnv(b),
			})
			if err != nil {
				b.Fatal(err)
			}
			phases := []string{"reproduce", "regression", "patch", "verify", "forge"}
			sum := map[string]time.Duration{}
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				it := crashItem(fmt.Sprintf("%016x", n+1), "compile panic on enum E {}", "enum E {}")
				j, err := f.Fix(context.Background(), it, nil, fixer.JobOptions{Dir: filepath.Join(b.TempDir(), "job")})
				if err != nil || j.Outcome != fixer.OutcomeOpened || j.Verified != (mode == "verified") {
					b.Fatalf("job: %v %s verified %v", err, j.Outcome, j.Verified)
				}
				for _, p := range phases {
					sum[p] += j.Timings[p]
				}
				n++
			}
			for _, p := range phases {
				b.ReportMetric(float64(sum[p].Milliseconds())/float64(n), p+"-ms/op")
			}
		})
	}
}

// patchModel is a fleet.Model that proposes the same patch on every call.
type patchModel string

func (m patchModel) Next(context.Context, *fleet.State) (fleet.Step, error) {
	return fleettest.Calls(fixer.ProposePatch, map[string]string{"diff": string(m)}), nil
}
