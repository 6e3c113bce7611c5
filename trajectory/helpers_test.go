package trajectory

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 4, 12, 0, 0, time.UTC)

// fakeClock returns a clock that advances by step on every call.
func fakeClock(step time.Duration) func() time.Time {
	now := t0
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

func sampleHeader() Header {
	return Header{
		Specialist:     "qa-smoke",
		Goal:           "create, compile, publish, fetch and call; report what broke",
		PersonaSHA256:  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Build:          "fleetd 0.1.0 (abc1234)",
		Model:          "playbook/smoke",
		HarnessVersion: "0.1.0",
		Dial:           "exercise",
		Budget:         Budget{MaxTurns: 25, MaxWrites: 4, MaxTokens: 200000, DeadlineMS: 600000, MaxWei: "10000000000000000"},
		Tools: []ToolInfo{
			{Name: "qa_create", Rung: "exercise"},
			{Name: "qa_compile", Rung: "observe", SchemaSHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
		},
		Config:    map[string]any{"turn_budget_ms": 30000, "chain": map[string]any{"rpc": "http://127.0.0.1:8545", "chain_id": 1337}},
		StartedAt: t0,
	}
}

// fetchResult is a typical tool result, ~1 KB encoded.
type fetchResult struct {
	OK          bool              `json:"ok"`
	LatencyMS   int64             `json:"latency_ms"`
	Status      int               `json:"status"`
	ContentType string            `json:"content_type"`
	Bytes       int               `json:"bytes"`
	SHA256      string            `json:"sha256"`
	Headers     map[string]string `json:"headers"`
	Body        string            `json:"body"`
	Error       string            `json:"error,omitempty"`
}

func sampleTurn(i int) Turn {
	return Turn{
		Index:          i,
		Observation:    map[string]any{"step": "fetch face", "name": "qa-r1-0"},
		ProposedAction: &Action{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"http://127.0.0.1:8080/names/qa-r1-0"}`)},
		Validation:     Validation{Result: ValidationOK},
		ExecutedAction: &Action{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"http://127.0.0.1:8080/names/qa-r1-0"}`)},
		Result: fetchResult{
			OK: true, LatencyMS: 12, Status: 200, ContentType: "text/html; charset=utf-8", Bytes: 612,
			SHA256:  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			Headers: map[string]string{"content-security-policy": "default-src 'self'", "x-frame-options": "DENY", "server": "testbed/0.1"},
			Body: "<!doctype html><html><head><title>qa-r1-0</title></head><body><h1>qa-r1-0</h1>" +
				"<p>A sandbox name minted by the smoke specialist. Owner 0x71C7656EC7ab88b098defB751B7401B5f6d8976F.</p>" +
				"<ul><li><a href=\"/llms.txt\">llms.txt</a></li><li><a href=\"/skill.md\">skill.md</a></li></ul>" +
				"<pre>tx 0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060\n" +
				"block 0x88e96d4537bea4d9c05d12549907b32561d3bf31f45aae734cdc119f13406cb6</pre>" +
				"<p>Reply: hello from the agent endpoint; all systems nominal. Latency within SLO.</p></body></html>",
		},
		ModelMetadata: ModelMetadata{TokensIn: 1200, TokensOut: 80, DurationMS: 340},
		LatencyMS:     360,
		StartedAt:     t0.Add(time.Duration(i+1) * time.Second),
	}
}

// mustCreate starts a run record in a fresh temp data dir.
func mustCreate(tb testing.TB, runID string, opts ...Option) *Writer {
	tb.Helper()
	w, err := Create(tb.TempDir(), runID, sampleHeader(), append([]Option{WithClock(fakeClock(time.Second))}, opts...)...)
	if err != nil {
		tb.Fatalf("Create: %v", err)
	}
	tb.Cleanup(func() { w.Close(Footer{Outcome: OutcomeCancelled}) })
	return w
}

func mustReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
