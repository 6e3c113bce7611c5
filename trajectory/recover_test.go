package trajectory

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeRun writes data as a run record whose last write was at mtime.
func writeRun(t *testing.T, data []byte, mtime time.Time) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.jsonl")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRecover(t *testing.T) {
	full := finishedRun(t, 3)
	ls := lines(full)
	crashAt := t0.Add(10 * time.Second)
	refused := sampleTurn(2)
	refused.Validation = Validation{Result: ValidationRefused, Reason: "needs dial exercise, dial is observe"}
	refused.ExecutedAction, refused.Result = nil, nil
	refused.Findings, refused.Writes = 0, 0
	refusedLine, err := MarshalRecord(refused)
	if err != nil {
		t.Fatal(err)
	}
	report := sampleTurn(1)
	report.Findings, report.Writes = 1, 1
	reportLine, err := MarshalRecord(report)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		data   []byte
		keep   []byte // the prefix Recover must keep
		totals Totals
	}{
		{"header only", ls[0], ls[0], Totals{DurationMS: 10000}},
		{"torn tail", append(bytes.Join(ls[:3], nil), ls[3][:40]...), bytes.Join(ls[:3], nil),
			Totals{Turns: 2, ToolCalls: 2, TokensIn: 2400, TokensOut: 160, DurationMS: 10000}},
		{"torn footer", full[:len(full)-3], bytes.Join(ls[:4], nil),
			Totals{Turns: 3, ToolCalls: 3, TokensIn: 3600, TokensOut: 240, DurationMS: 10000}},
		{"totals from turns", bytes.Join([][]byte{ls[0], ls[1], reportLine, {'\n'}, refusedLine, {'\n'}}, nil), nil,
			Totals{Turns: 3, ToolCalls: 2, Refusals: 1, Findings: 1, Writes: 1, TokensIn: 3600, TokensOut: 240, DurationMS: 10000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeRun(t, tt.data, crashAt)
			ok, err := Recover(p, "daemon restarted")
			if err != nil || !ok {
				t.Fatalf("Recover = %v, %v; want true, nil", ok, err)
			}
			got := mustReadFile(t, p)
			if tt.keep != nil && !bytes.HasPrefix(got, tt.keep) {
				t.Errorf("Recover changed the intact records:\n%s", got)
			}
			run, err := ReadAll(p)
			if err != nil {
				t.Fatal(err)
			}
			want := &Footer{Outcome: OutcomeHarnessError, FinalSummary: RecoveredSummary, HarnessError: "daemon restarted", Totals: tt.totals, EndedAt: crashAt}
			if diff := cmp.Diff(want, run.Footer); diff != "" {
				t.Errorf("footer (-want +got):\n%s", diff)
			}
			if run.Torn {
				t.Error("recovered file still torn")
			}
			// Idempotent.
			ok, err = Recover(p, "again")
			if ok || err != nil {
				t.Errorf("second Recover = %v, %v; want false, nil", ok, err)
			}
			if again := mustReadFile(t, p); !bytes.Equal(again, got) {
				t.Error("second Recover changed the file")
			}
		})
	}
}

func TestRecoverLeavesAlone(t *testing.T) {
	full := finishedRun(t, 2)
	ls := lines(full)
	tests := []struct {
		name string
		data []byte
		ok   func(error) bool
	}{
		{"finished", full, func(err error) bool { return err == nil }},
		{"empty", nil, func(err error) bool { return errors.Is(err, ErrNoHeader) }},
		{"torn header", ls[0][:50], func(err error) bool { return errors.Is(err, ErrNoHeader) }},
		{"corrupt middle", bytes.Join([][]byte{ls[0], []byte("garbage\n"), ls[1]}, nil), func(err error) bool {
			var ce *CorruptError
			return errors.As(err, &ce) && ce.Line == 2
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeRun(t, tt.data, t0)
			ok, err := Recover(p, "x")
			if ok || !tt.ok(err) {
				t.Errorf("Recover = %v, %v", ok, err)
			}
			if got := mustReadFile(t, p); !bytes.Equal(got, tt.data) {
				t.Errorf("file changed:\n%s", got)
			}
		})
	}
	if _, err := Recover(filepath.Join(t.TempDir(), "missing.jsonl"), "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestRecoverRedactsReason(t *testing.T) {
	p := writeRun(t, lines(finishedRun(t, 0))[0], t0)
	if _, err := Recover(p, "panic: signer PRIVATE_KEY=0x"+privHex); err != nil {
		t.Fatal(err)
	}
	run, err := ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Footer.HarnessError; got != "panic: signer PRIVATE_KEY=[REDACTED:private_key]" {
		t.Errorf("harness_error %q", got)
	}
}
