package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists"
)

// Corpus checks target.corpus (specialists.LoadCorpus: known-good
// programs) and, when target.compiler is set, the compiler on its first
// program (Compiler, in a throwaway jail under sandboxDir, within
// compileTimeout). A corpus or compiler not configured is a passing line
// saying what is skipped; a corpus that does not load or holds nothing is
// fatal.
func Corpus(ctx context.Context, t fleet.Target, sandboxDir string, compileTimeout time.Duration) []Check {
	var out []Check
	corpus, err := specialists.LoadCorpus(t.Corpus)
	switch {
	case t.Corpus == "":
		out = append(out, Check{Name: "corpus", OK: true, Detail: "target.corpus is not set: the smoke and fuzz probes skip compiling"})
	case err != nil:
		out = append(out, Check{Name: "corpus", Fatal: true, Detail: err.Error(), Fix: "set target.corpus to a directory of known-good sources (relative paths resolve against the config file)"})
	case len(corpus) == 0:
		out = append(out, Check{Name: "corpus", Fatal: true, Detail: t.Corpus + " holds no usable file (non-empty, at most 64 KiB, not hidden)", Fix: "put known-good sources in target.corpus"})
	default:
		out = append(out, Check{Name: "corpus", OK: true, Fatal: true, Detail: fmt.Sprintf("%s: %d programs", t.Corpus, len(corpus))})
	}
	switch {
	case len(t.Compiler) == 0:
		out = append(out, Check{Name: "compiler", OK: true, Detail: "target.compiler is not set: qa_compile is unavailable"})
	case len(corpus) == 0:
		out = append(out, Check{Name: "compiler", Detail: "not checked: no corpus file to compile"})
	default:
		out = append(out, Compiler(ctx, sandboxDir, t.Compiler, corpus[0], compileTimeout))
	}
	return out
}
