package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.jsonl from the current writer")

// goldenRun writes the run every golden file is made from and returns its
// path. It covers every record type, refusals, raw JSON kept as written,
// nulls, HTML, non-ASCII text and redaction.
func goldenRun(t *testing.T) string {
	t.Helper()
	h := sampleHeader()
	h.Config = map[string]any{"note": "<b>&</b> ünïcödé \u2028 tab\t", "chain_id": 1337}
	w, err := Create(t.TempDir(), "r-20261122-0412", h, WithClock(fakeClock(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	refused := Turn{
		Index:          1,
		Observation:    "name qa-r1-0 exists; next: publish",
		ProposedAction: &Action{Tool: "qa_publish", Args: json.RawMessage(`{"name":"qa-r1-0","source":"fn main() {}"}`)},
		Validation:     Validation{Result: ValidationRefused, Reason: "refused: needs dial exercise, dial is observe"},
		ModelMetadata:  ModelMetadata{TokensIn: 900, TokensOut: 40, DurationMS: 210},
		LatencyMS:      215,
		StartedAt:      t0.Add(2 * time.Second),
	}
	raw := Turn{
		Index:          2,
		Observation:    json.RawMessage(`null`),
		ProposedAction: &Action{Tool: "qa_chain", Args: json.RawMessage(`{ "method": "eth_call",  "params": [ {"to":"0x71C7656EC7ab88b098defB751B7401B5f6d8976F","data":"0x8da5cb5b"}, "latest" ] }`)},
		Validation:     Validation{Result: ValidationOK, Retries: 1},
		ExecutedAction: &Action{Tool: "qa_chain", Args: json.RawMessage(`{"method":"eth_call","params":[{"to":"0x71C7656EC7ab88b098defB751B7401B5f6d8976F","data":"0x8da5cb5b"},"latest"]}`)},
		Result:         json.RawMessage(`{"ok":true,  "zeta":1, "alpha":"0x000000000000000000000000` + "71c7656ec7ab88b098defb751b7401b5f6d8976f" + `", "latency_ms":3, "debug":"signer PRIVATE_KEY=0x` + privHex + `", "esc":"\u003cok\u003e"}`),
		ModelMetadata:  ModelMetadata{TokensIn: 1000, TokensOut: 60, DurationMS: 250},
		LatencyMS:      260,
		StartedAt:      t0.Add(3 * time.Second),
	}
	report := Turn{
		Index:          3,
		Observation:    map[string]any{"reply": "héllo — 你好", "status": 500},
		ProposedAction: &Action{Tool: "qa_report", Args: json.RawMessage(`{"severity":"high","surface":"call","summary":"agent endpoint 500s on empty body","repro":"qa_call {\"target\":\"qa-r1-0\",\"message\":\"\"}"}`)},
		Validation:     Validation{Result: ValidationOK},
		ExecutedAction: &Action{Tool: "qa_report", Args: json.RawMessage(`{"severity":"high","surface":"call","summary":"agent endpoint 500s on empty body","repro":"qa_call {\"target\":\"qa-r1-0\",\"message\":\"\"}"}`)},
		Result:         map[string]any{"ok": true, "latency_ms": 41, "entry_id": 17, "tx": "0x" + txHex},
		ModelMetadata:  ModelMetadata{TokensIn: 1100, TokensOut: 90, DurationMS: 300},
		LatencyMS:      345,
		Findings:       1,
		Writes:         1,
		StartedAt:      t0.Add(4 * time.Second),
	}
	steps := []func() error{
		func() error { return w.WriteTurn(sampleTurn(0)) },
		func() error { return w.WriteTurn(refused) },
		func() error {
			return w.WriteToolDisabled(ToolDisabled{Tool: "qa_fetch", Reason: "3 failures in a row: dial tcp 127.0.0.1:8080: connection refused", Turn: 2})
		},
		func() error { return w.WriteTurn(raw) },
		func() error { return w.WriteTurn(report) },
		func() error {
			return w.Close(Footer{Outcome: OutcomeDone, FinalSummary: "1 finding: agent endpoint 500s on an empty body", EndedAt: t0.Add(5 * time.Second)})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return w.Path()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the writer's output (run with -update if the change is intended)\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	path := goldenRun(t)
	full := mustReadFile(t, path)
	checkGolden(t, "run.golden.jsonl", full)

	// A crash after turn 2: the header, three records and half of turn 3.
	ls := lines(full)
	crashed := append(bytes.Join(ls[:4], nil), ls[4][:100]...)
	p := writeRun(t, crashed, t0.Add(4*time.Second+500*time.Millisecond))
	if ok, err := Recover(p, "fleetd was killed (signal: killed)"); !ok || err != nil {
		t.Fatalf("Recover = %v, %v", ok, err)
	}
	checkGolden(t, "recovered.golden.jsonl", mustReadFile(t, p))
}

// TestRoundTrip reads every golden file and re-encodes each record: the
// bytes must come out identical.
func TestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden.jsonl"))
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := mustReadFile(t, file)
			r, err := Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got bytes.Buffer
			for {
				rec, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				line, err := MarshalRecord(rec)
				if err != nil {
					t.Fatal(err)
				}
				got.Write(line)
				got.WriteByte('\n')
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("re-encoded bytes differ\n got:\n%s\nwant:\n%s", got.Bytes(), want)
			}
		})
	}
}
