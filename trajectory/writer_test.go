package trajectory

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCreatePermissionsAndExclusive(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "r-perm", sampleHeader())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(Footer{Outcome: OutcomeDone})
	if w.Path() != filepath.Join(dir, "runs", "r-perm.jsonl") || w.Path() != Path(dir, "r-perm") {
		t.Errorf("Path = %s", w.Path())
	}
	for path, want := range map[string]fs.FileMode{filepath.Join(dir, "runs"): 0o700, w.Path(): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	if _, err := Create(dir, "r-perm", sampleHeader()); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create = %v, want fs.ErrExist", err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "runs"))
	if len(entries) != 1 {
		t.Errorf("runs dir holds %d entries, want only the run record (no temp files)", len(entries))
	}
}

func TestCreateValidates(t *testing.T) {
	dir := t.TempDir()
	h := sampleHeader()
	h.RunID = "other"
	for name, err := range map[string]error{
		"bad id":             func() error { _, err := Create(dir, "../escape", sampleHeader()); return err }(),
		"dot id":             func() error { _, err := Create(dir, ".hidden", sampleHeader()); return err }(),
		"header id mismatch": func() error { _, err := Create(dir, "r-1", h); return err }(),
		"zero budget":        func() error { _, err := Create(dir, "r-2", sampleHeader(), WithMaxBytes(0)); return err }(),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	bad := sampleHeader()
	bad.Config = map[string]any{"ch": make(chan int)}
	var ue *UnserializableError
	if _, err := Create(dir, "r-3", bad); !errors.As(err, &ue) || ue.Field != "header.config.ch" {
		t.Errorf("Create with a channel in config = %v, want field header.config.ch", err)
	}
	if _, err := os.Stat(Path(dir, "r-3")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused header left a file: %v", err)
	}
}

func TestWriterOrdering(t *testing.T) {
	w := mustCreate(t, "r-order")
	if err := w.WriteTurn(sampleTurn(1)); !errors.Is(err, ErrOrder) {
		t.Errorf("turn 1 first = %v, want ErrOrder", err)
	}
	if err := w.WriteTurn(sampleTurn(0)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTurn(sampleTurn(0)); !errors.Is(err, ErrOrder) {
		t.Errorf("turn 0 twice = %v, want ErrOrder", err)
	}
	if err := w.WriteToolDisabled(ToolDisabled{Tool: "qa_fetch", Reason: "3 failures", Turn: 0}); !errors.Is(err, ErrOrder) {
		t.Errorf("tool_disabled for a past turn = %v, want ErrOrder", err)
	}
	if err := w.WriteToolDisabled(ToolDisabled{Tool: "qa_fetch", Reason: "3 failures", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteToolDisabled(ToolDisabled{Reason: "x", Turn: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("tool_disabled without tool = %v, want ErrInvalid", err)
	}
	for _, f := range []Footer{
		{Outcome: "exploded"},
		{Outcome: OutcomeCrashed},
		{Outcome: OutcomeHarnessError},
		{Outcome: OutcomeDone, HarnessError: "why"},
	} {
		if err := w.Close(f); !errors.Is(err, ErrInvalid) {
			t.Errorf("Close(%+v) = %v, want ErrInvalid", f, err)
		}
	}
	// Refused footers leave the writer open.
	if err := w.WriteTurn(sampleTurn(1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(Footer{Outcome: OutcomeHarnessError, HarnessError: "rpc down", FinalSummary: "stopped"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(Footer{Outcome: OutcomeDone}); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if err := w.WriteTurn(sampleTurn(2)); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteTurn after Close = %v, want ErrClosed", err)
	}
	if err := w.WriteToolDisabled(ToolDisabled{Tool: "x", Turn: 2}); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteToolDisabled after Close = %v, want ErrClosed", err)
	}

	run, err := ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range run.Records {
		types = append(types, r.RecordType())
	}
	if diff := cmp.Diff([]string{"header", "turn", "tool_disabled", "turn", "footer"}, types); diff != "" {
		t.Errorf("record order (-want +got):\n%s", diff)
	}
	want := Totals{Turns: 2, ToolCalls: 2, TokensIn: 2400, TokensOut: 160, DurationMS: 1000}
	if diff := cmp.Diff(want, run.Footer.Totals); diff != "" {
		t.Errorf("totals filled from turns (-want +got):\n%s", diff)
	}
	if run.Footer.HarnessError != "rpc down" || run.Torn {
		t.Errorf("footer %+v torn %v", run.Footer, run.Torn)
	}
}

func TestWriterTotals(t *testing.T) {
	w := mustCreate(t, "r-totals")
	refused := Turn{Index: 0, ProposedAction: &Action{Tool: "qa_create"}, Validation: Validation{Result: ValidationRefused, Reason: "needs dial exercise"}, ModelMetadata: ModelMetadata{TokensIn: 5, TokensOut: 1}}
	report := Turn{Index: 1, ProposedAction: &Action{Tool: "qa_report"}, ExecutedAction: &Action{Tool: "qa_report"}, Validation: Validation{Result: ValidationOK}, Findings: 1, Writes: 1}
	for _, tr := range []Turn{refused, report} {
		if err := w.WriteTurn(tr); err != nil {
			t.Fatal(err)
		}
	}
	got := w.Totals()
	want := Totals{Turns: 2, ToolCalls: 1, Refusals: 1, Findings: 1, Writes: 1, TokensIn: 5, TokensOut: 1, DurationMS: 1000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Totals (-want +got):\n%s", diff)
	}
	// Explicit totals are written as given.
	explicit := Totals{Turns: 9, DurationMS: 1}
	if err := w.Close(Footer{Outcome: OutcomeDone, Totals: explicit}); err != nil {
		t.Fatal(err)
	}
	run, err := ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if run.Footer.Totals != explicit {
		t.Errorf("footer totals %+v, want %+v", run.Footer.Totals, explicit)
	}
}

func TestSizeBudget(t *testing.T) {
	const budget = 8 << 10 // reserve is 2 KiB
	w := mustCreate(t, "r-size", WithMaxBytes(budget))
	n := 0
	var err error
	for ; n < 100; n++ {
		if err = w.WriteTurn(sampleTurn(n)); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrSizeBudget) {
		t.Fatalf("after %d turns: %v, want ErrSizeBudget", n, err)
	}
	if n == 0 {
		t.Fatal("no turn fit")
	}
	before := mustReadFile(t, w.Path())
	if len(before) > budget-budget/4 {
		t.Errorf("records use %d bytes, more than budget minus reserve", len(before))
	}
	// The refused record wrote nothing; a small record still fits.
	if err := w.WriteToolDisabled(ToolDisabled{Tool: "qa_fetch", Reason: "size", Turn: n}); err != nil {
		t.Errorf("small record after refusal: %v", err)
	}
	// The footer is always written, even with a long summary.
	if err := w.Close(Footer{Outcome: OutcomeSizeExceeded, FinalSummary: strings.Repeat("s", 1500)}); err != nil {
		t.Fatal(err)
	}
	run, err := ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if run.Footer == nil || run.Footer.Outcome != OutcomeSizeExceeded || len(run.Turns()) != n {
		t.Errorf("footer %+v, %d turns, want size_exceeded and %d", run.Footer, len(run.Turns()), n)
	}
	if st, _ := os.Stat(w.Path()); st.Size() > budget {
		t.Errorf("file is %d bytes, budget %d", st.Size(), budget)
	}

	// A header that does not fit is refused before any file exists.
	dir := t.TempDir()
	if _, err := Create(dir, "r-tiny", sampleHeader(), WithMaxBytes(256)); !errors.Is(err, ErrSizeBudget) {
		t.Errorf("Create with a tiny budget = %v, want ErrSizeBudget", err)
	}
}

func TestWriterRedacts(t *testing.T) {
	red, err := NewRedactor()
	if err != nil {
		t.Fatal(err)
	}
	w := mustCreate(t, "r-redact", WithRedactor(red))
	throwaway := "0x" + privHex
	if err := w.AddSecret(throwaway); err != nil {
		t.Fatal(err)
	}
	turn := sampleTurn(0)
	turn.Observation = "funded " + throwaway[2:] + " with 1 ETH"
	turn.Result = map[string]any{
		"ok":       true,
		"owner":    "0x71C7656EC7ab88b098defB751B7401B5f6d8976F",
		"tx":       "0x" + txHex,
		"body":     "config.js: const KEY = '" + googleK + "'; // PRIVATE_KEY=" + strings.Repeat("ab", 32),
		"raw":      []byte("not scanned: base64"),
		"key_echo": throwaway,
		"page":     "<li>" + strings.ReplaceAll(devPhrase, " ", "</li><li>") + "</li>",
	}
	if err := w.WriteTurn(turn); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(Footer{Outcome: OutcomeDone, FinalSummary: "used key " + throwaway}); err != nil {
		t.Fatal(err)
	}
	data := string(mustReadFile(t, w.Path()))
	for _, secret := range []string{privHex, googleK, strings.Repeat("ab", 32), "junk"} {
		if strings.Contains(data, secret) {
			t.Errorf("secret %s written", secret)
		}
	}
	for _, kept := range []string{"0x" + txHex, "0x71C7656EC7ab88b098defB751B7401B5f6d8976F", `"funded [REDACTED:registered] with 1 ETH"`, "[REDACTED:google_api_key]", "PRIVATE_KEY=[REDACTED:private_key]", `"page":"<li>[REDACTED:mnemonic]</li>"`, `"final_summary":"used key [REDACTED:registered]"`} {
		if !strings.Contains(data, kept) {
			t.Errorf("record lacks %s:\n%s", kept, data)
		}
	}
}

func TestWriterSyncInterval(t *testing.T) {
	for _, d := range []time.Duration{-1, time.Millisecond} {
		w := mustCreate(t, "r-sync", WithSyncInterval(d))
		for i := range 3 {
			if err := w.WriteTurn(sampleTurn(i)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := w.Close(Footer{Outcome: OutcomeDone}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReaderOnWriterOutputStreams(t *testing.T) {
	w := mustCreate(t, "r-stream")
	if err := w.WriteTurn(sampleTurn(0)); err != nil {
		t.Fatal(err)
	}
	// A reader sees the turn before the run is closed: nothing is buffered.
	r, err := Open(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, want := range []string{TypeHeader, TypeTurn} {
		rec, err := r.Next()
		if err != nil || rec.RecordType() != want {
			t.Fatalf("Next = %v, %v; want %s", rec, err, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next at the end of an open run = %v, want io.EOF", err)
	}
}

// TestWriterSyncsWithinInterval checks an idle run is fsynced by the timer,
// not only at the next write.
func TestWriterSyncsWithinInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, err := Create(t.TempDir(), "r-timer", sampleHeader(), WithSyncInterval(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(Footer{Outcome: OutcomeDone})
		dirty := func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.dirty
		}
		if err := w.WriteTurn(sampleTurn(0)); err != nil {
			t.Fatal(err)
		}
		if !dirty() {
			t.Fatal("a written turn is not pending sync")
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if !dirty() {
			t.Fatal("synced before the interval")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if dirty() {
			t.Fatal("not synced within the interval")
		}
		// The next write starts a new interval.
		if err := w.WriteTurn(sampleTurn(1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if dirty() {
			t.Fatal("second write not synced")
		}
	})
}

// TestWriterWriteFailureIsSticky swaps in a read-only descriptor: the write
// fails and cannot be undone, so the writer refuses everything after and
// leaves the file as it was for Recover.
func TestWriterWriteFailureIsSticky(t *testing.T) {
	w := mustCreate(t, "r-broken")
	if err := w.WriteTurn(sampleTurn(0)); err != nil {
		t.Fatal(err)
	}
	before := mustReadFile(t, w.Path())
	ro, err := os.Open(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	good := w.f
	w.f = ro
	w.mu.Unlock()
	defer good.Close()
	err1 := w.WriteTurn(sampleTurn(1))
	if err1 == nil {
		t.Fatal("write on a read-only descriptor succeeded")
	}
	if err2 := w.WriteTurn(sampleTurn(1)); err2 == nil || !strings.Contains(err2.Error(), "could not be undone") {
		t.Errorf("second write = %v, want the sticky error", err2)
	}
	if err := w.Close(Footer{Outcome: OutcomeDone}); err == nil {
		t.Error("Close on a broken writer = nil")
	}
	if after := mustReadFile(t, w.Path()); !bytes.Equal(after, before) {
		t.Errorf("file changed")
	}
	if ok, err := Recover(w.Path(), "write failed"); !ok || err != nil {
		t.Errorf("Recover = %v, %v", ok, err)
	}
}
