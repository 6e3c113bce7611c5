package fixer

import (
	"fmt"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
)

// Sizes in a PR body: GitHub caps a body at 65,536 characters.
const (
	bodyOutput = 3000 // bytes of each command's output
	bodyDiff   = 6000
	bodyMax    = 60000
)

// prTitle is the PR's title: the finding's headline, inert.
func prTitle(j *Job) string {
	t := Inline(firstLine(j.Item.Title), 90)
	if t == "" {
		t = "a " + string(j.Item.Severity) + " " + string(j.Item.Surface) + " finding"
	}
	if j.Verified {
		return "fleetd: fix " + t
	}
	return "fleetd: regression test for " + t
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// prBody renders the PR description: the finding, the repro, the
// verification log and the on-chain entries. Every string from the log or
// from a command's output is inside Code or Block; everything else is
// fleetd's own text.
func prBody(j *Job, modelName string) string {
	var b strings.Builder
	it := j.Item
	if j.Verified {
		b.WriteString("fleetd reproduced a finding from its feedback log, added a regression test, and verified a model-proposed patch: the regression test fails on the base branch and passes with the patch, and the repository's test command passes. **Review it like any other change; fleetd never merges.**\n\n")
	} else {
		b.WriteString("**Draft.** fleetd reproduced a finding from its feedback log and adds a regression test that fails on the base branch. ")
		if len(j.Attempts) > 0 {
			fmt.Fprintf(&b, "No verified fix: %d patch attempts failed (listed below).", len(j.Attempts))
		} else {
			b.WriteString("It carries no fix (no model is configured, or the failure points at no file a patch may touch).")
		}
		b.WriteString(" Merging it as it is makes the test suite fail until the bug is fixed.\n\n")
	}
	b.WriteString("## Finding\n\n")
	fmt.Fprintf(&b, "- fingerprint: %s\n- severity: %s, surface: %s\n", Code(it.ID, 40), Code(string(it.Severity), 20), Code(string(it.Surface), 40))
	if len(it.Sources) > 0 {
		srcs := make([]string, 0, len(it.Sources))
		for _, s := range it.Sources {
			srcs = append(srcs, Code(s, 60))
		}
		fmt.Fprintf(&b, "- reported by: %s\n", strings.Join(srcs, ", "))
	}
	b.WriteString("\nAs written on the log (untrusted text, shown as data):\n\n")
	b.WriteString(Block(it.Title, 2000))
	b.WriteString("\n## Reproduction\n\n")
	b.WriteString(Block(it.Repro.Tool+" "+string(it.Repro.Args), 2500))
	if r := j.Repro; r != nil {
		fmt.Fprintf(&b, "\nReplayed in a fresh sandbox (run %s): %s.\n", Code(r.RunID, 60), Code(r.Outcome, 40))
		if r.Detail != "" {
			b.WriteString("\n<details><summary>output</summary>\n\n" + Block(r.Detail, bodyOutput) + "\n</details>\n")
		}
		if len(r.LeftOnPlatform) > 0 {
			b.WriteString("\nThe replay left on the platform what it could not undo:\n\n")
			for _, l := range r.LeftOnPlatform {
				b.WriteString("- " + Code(l, 400) + "\n")
			}
		}
	}
	if rt := j.Regression; rt != nil {
		b.WriteString("\n## Regression test\n\n")
		fmt.Fprintf(&b, "%s, run with %s.\n", Code(rt.Path, 300), Code(strings.Join(rt.Argv, " "), 400))
		if j.Before != nil {
			fmt.Fprintf(&b, "\n**Before** (base %s): fails, exit %d%s.\n\n", Code(shortSHA(j.Base), 20), j.Before.ExitCode, timedOut(j.Before))
			b.WriteString(Block(j.Before.Output, bodyOutput))
		}
	}
	if bi := j.Bisect; bi != nil {
		b.WriteString("\n## Cause\n\n")
		switch {
		case bi.Commit != "":
			fmt.Fprintf(&b, "First bad commit: %s %s (%s), found by `git bisect` over %d commits of the base branch with the regression test as the judge.\n",
				Code(bi.Commit, 50), Code(Inline(bi.Subject, 120), 130), bi.Date.UTC().Format(time.RFC3339), bi.Tried)
		case bi.PresentSinceOldest:
			fmt.Fprintf(&b, "Present since the oldest commit tried: the regression test fails at %s too (%d commits back: the start of the history or the bisection's bound).\n", Code(bi.Oldest, 50), bi.Span)
		default:
			fmt.Fprintf(&b, "Not found: %s\n", Code(bi.Note, 300))
		}
	}
	if j.Verified {
		b.WriteString("\n## Verification\n\n")
		fmt.Fprintf(&b, "**After** (with the patch): the regression test passes (%s).\n\n", j.After.Duration.Round(time.Millisecond))
		b.WriteString(Block(j.After.Output, bodyOutput/2))
		fmt.Fprintf(&b, "\nThe test command %s passes (%s).\n\n", Code(strings.Join(j.Suite.Argv, " "), 300), j.Suite.Duration.Round(time.Millisecond))
		b.WriteString(Block(j.Suite.Output, bodyOutput/2))
	}
	if len(j.Attempts) > 0 {
		b.WriteString("\n## Patch attempts\n\n")
		if modelName != "" {
			fmt.Fprintf(&b, "Model: %s. ", Code(modelName, 80))
		}
		fmt.Fprintf(&b, "Each attempt was checked (only the files the failing test's stack frames point at; no tests, test data or CI configuration) and verified in a scratch worktree.\n\n")
		for _, a := range j.Attempts {
			fmt.Fprintf(&b, "%d. %s", a.N, Code(a.Result, 30))
			if len(a.Files) > 0 {
				fmt.Fprintf(&b, " — files %s", Code(strings.Join(a.Files, ", "), 300))
			}
			b.WriteString("\n")
			if a.Detail != "" && a.Result != verificationVerified {
				b.WriteString("\n" + indent(Block(a.Detail, 1500), "   ") + "\n")
			}
		}
	}
	if len(it.Entries) > 0 {
		b.WriteString("\n## On-chain entries\n\n| index | sender | block time | tx |\n| --- | --- | --- | --- |\n")
		for _, e := range it.Entries {
			tx := "(not found)"
			if e.Tx != "" {
				tx = Code(e.Tx, 70)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", e.Index, Code(e.Sender.String(), 50), e.Time.UTC().Format(time.RFC3339), tx)
		}
	}
	fmt.Fprintf(&b, "\n---\nOpened by fleetd's fix stage (job %s). One PR per fingerprint: a later run updates this one.\n", Code(j.ID, 60))
	out := b.String()
	if len(out) > bodyMax {
		out = clip.Text(out, bodyMax) + "\n\n(trimmed)\n"
	}
	return out
}

func timedOut(c *CommandLog) string {
	if c.TimedOut {
		return ", timed out"
	}
	return ""
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n")
}
