package gitlocal_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fleet"
)

// commitFile rewrites file in repo with edit and commits it with subject;
// it returns the commit's hash.
func commitFile(t *testing.T, repo, file, subject string, edit func(string) string) string {
	t.Helper()
	p := filepath.Join(repo, file)
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	fixertest.Git(t, repo, "add", "--", file)
	fixertest.Git(t, repo, "commit", "--quiet", "-m", subject)
	return fixertest.Git(t, repo, "rev-parse", "HEAD")
}

const (
	crashLine = "\te.zero = d.variants[0].name\n"
	guarded   = "\tif len(d.variants) == 0 {\n\t\tc.fail(d.pos, \"enum %s has no variants\", d.name)\n\t}\n\te.zero = d.variants[0].name\n"
)

// TestBisectNamesTheCommit: a history where the compiler's panic on an
// enum without variants is fixed, then brought back by a known commit; the
// fix job's bisection names that commit (hash, subject, date) in the job,
// the record and the PR's body. With the range reaching back to the first
// commit, which crashes too, it says the bug is present since the oldest
// commit tried.
func TestBisectNamesTheCommit(t *testing.T) {
	e := newEnv(t)
	note := func(s string) func(string) string { return func(old string) string { return old + s + "\n" } }
	commitFile(t, e.repo, "compile.go", "guard enums without variants", func(s string) string {
		if !strings.Contains(s, crashLine) {
			t.Fatal("compile.go has no crash line")
		}
		return strings.Replace(s, crashLine, guarded, 1)
	})
	commitFile(t, e.repo, "NOTES.md", "notes: the enum guard", note("enums need a variant"))
	commitFile(t, e.repo, "NOTES.md", "notes: lowering", note("lowering is one pass"))
	culprit := commitFile(t, e.repo, "compile.go", "simplify enum lowering", func(s string) string { return strings.Replace(s, guarded, crashLine, 1) })
	commitFile(t, e.repo, "NOTES.md", "notes: release", note("release 0.2"))
	commitFile(t, e.repo, "NOTES.md", "notes: typo", note("typo fixed"))

	// Six commits before base reach the first one, which crashes too; five
	// stop at the fix.
	f := e.fixer(t, nil, func(c *fixer.Config) { c.BisectCommits = 5 })
	j := fix(t, f, crashItem(fpA, "compile panic on enum E {}", "enum E {}"))
	b := j.Bisect
	if b == nil || b.Commit != culprit || b.Subject != "simplify enum lowering" || b.Date.IsZero() || b.PresentSinceOldest {
		t.Fatalf("bisection %+v, want %s", b, culprit)
	}
	if b.Tried < 3 || b.Tried > 5 || b.Span != 5 || j.Timings["bisect"] <= 0 {
		t.Errorf("bisection tried %d commits over a span of %d in %s", b.Tried, b.Span, j.Timings["bisect"])
	}
	t.Logf("bisect: %s; %d commits tried in %s", b.Line(), b.Tried, b.Duration)
	body := readRecord(t, e.forge, 1).Body
	for _, want := range []string{"## Cause", culprit, "simplify enum lowering", b.Date.UTC().Format("2006-01-02T15:04:05Z")} {
		if !strings.Contains(body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, body)
		}
	}
	recs, _ := f.Records()
	if len(recs) != 1 || recs[0].Cause == nil || recs[0].Cause.Commit != culprit {
		t.Errorf("record's cause: %+v", recs)
	}
	if kinds := e.poster.Kinds(); len(kinds) != 1 || kinds[0] != "cause ref="+fpA || !strings.Contains(e.poster.Posts[0].Summary, culprit) {
		t.Errorf("posted %v, want one kind=cause record naming %s", kinds, culprit)
	} else if text, err := fleet.Format(e.poster.Posts[0]); err != nil || !strings.Contains(text, "kind=cause") || !strings.Contains(text, "sev=meta") {
		t.Errorf("cause record %q: %v", text, err)
	} else if back, err := fleet.Parse(text); err != nil {
		t.Errorf("cause record %q does not parse: %v", text, err)
	} else if c, err := fleet.ParseCause(&back); err != nil || c.Commit != culprit || c.Subject != "simplify enum lowering" || !c.Date.Equal(b.Date.UTC().Truncate(time.Second)) || c.Span != 5 {
		t.Errorf("cause record %q reads back as %+v, %v", text, c, err)
	}
	// The next job on the same history posts nothing new.
	fix(t, f, crashItem(fpA, "compile panic on enum E {}", "enum E {}"))
	if n := len(e.poster.Kinds()); n != 1 {
		t.Errorf("the same cause was posted %d times", n)
	}
	if got := fixertest.Git(t, filepath.Join(e.state, "repo.git"), "worktree", "list"); strings.Contains(got, "bisect") {
		t.Errorf("the bisect worktree is left: %s", got)
	}

	// The whole history: the first commit crashes as well.
	e2 := newEnv(t)
	commitFile(t, e2.repo, "NOTES.md", "notes", note("one"))
	commitFile(t, e2.repo, "NOTES.md", "notes again", note("two"))
	first := fixertest.Git(t, e2.repo, "rev-list", "--max-parents=0", "HEAD")
	j = fix(t, e2.fixer(t, nil, nil), crashItem(fpA, "compile panic on enum E {}", "enum E {}"))
	if b := j.Bisect; b == nil || !b.PresentSinceOldest || b.Oldest != first || b.Commit != "" || b.Span != 2 {
		t.Fatalf("bisection %+v, want present since %s", j.Bisect, first)
	}
	if body := readRecord(t, e2.forge, 1).Body; !strings.Contains(body, "Present since the oldest commit tried") || !strings.Contains(body, first) {
		t.Errorf("PR body does not say since when:\n%s", body)
	}
	if p := e2.poster.Posts; len(p) != 1 || p[0].Kind != fleet.KindCause || !strings.Contains(p[0].Summary, "present since the oldest commit tried, "+first) {
		t.Errorf("posted %+v", p)
	}
	if p := e2.poster.Posts; len(p) == 1 {
		if c, err := fleet.ParseCause(&p[0]); err != nil || c.Since != first || c.Commit != "" || c.Span != 2 {
			t.Errorf("the since record reads back as %+v, %v", c, err)
		}
	}
}

// TestBisectOldestDoesNotBuild: when the oldest commit in range does not
// build, there is no good commit to start from: the job says why, names
// no commit, posts nothing and goes on to open its PR.
func TestBisectOldestDoesNotBuild(t *testing.T) {
	e := newEnv(t)
	commitFile(t, e.repo, "compile.go", "wip: half a refactor", func(s string) string { return s + "\nfunc broken( {\n" })
	commitFile(t, e.repo, "compile.go", "finish the refactor", func(s string) string { return strings.TrimSuffix(s, "\nfunc broken( {\n") })
	j := fix(t, e.fixer(t, nil, func(c *fixer.Config) { c.BisectCommits = 1 }), crashItem(fpA, "compile panic on enum E {}", "enum E {}"))
	b := j.Bisect
	if b == nil || b.Commit != "" || b.PresentSinceOldest || !strings.Contains(b.Note, "does not run at the oldest commit tried") {
		t.Fatalf("bisection %+v", b)
	}
	if j.Outcome != fixer.OutcomeOpened || len(e.poster.Posts) != 0 {
		t.Errorf("outcome %s, posted %v", j.Outcome, e.poster.Kinds())
	}
	if body := readRecord(t, e.forge, 1).Body; !strings.Contains(body, "## Cause") || !strings.Contains(body, "Not found") {
		t.Errorf("PR body does not say the cause was not found:\n%s", body)
	}
}
