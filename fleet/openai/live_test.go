package openai_test

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet/openai"
	"github.com/qafleet/fleetd/trajectory"
)

// TestLive runs the loop against a real server: OpenAI when OPENAI_API_KEY
// is set, or any OpenAI-compatible server at FLEETD_OPENAI_BASE_URL (e.g.
// http://127.0.0.1:11434/v1 for Ollama). FLEETD_OPENAI_MODEL picks the
// model (default gpt-4o-mini on OpenAI; required for other servers).
func TestLive(t *testing.T) {
	key := os.Getenv("OPENAI_API_KEY")
	base := os.Getenv("FLEETD_OPENAI_BASE_URL")
	if key == "" && base == "" {
		t.Skip("live test skipped: set OPENAI_API_KEY (OpenAI) or FLEETD_OPENAI_BASE_URL (a local OpenAI-compatible server such as Ollama), and FLEETD_OPENAI_MODEL")
	}
	model := os.Getenv("FLEETD_OPENAI_MODEL")
	if model == "" && base == "" {
		model = "gpt-4o-mini"
	}
	if model == "" {
		t.Skip("live test skipped: FLEETD_OPENAI_BASE_URL is set but FLEETD_OPENAI_MODEL is not (e.g. qwen2.5:7b)")
	}
	if testing.Short() {
		t.Skip("live test skipped in -short mode")
	}
	temp := 0.0
	m, err := openai.New(openai.Config{
		BaseURL: cmp.Or(base, openai.DefaultBaseURL), APIKey: key, Model: model, Temperature: &temp, MaxTokens: 512,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, rec := runLoop(ctx, t, m, "Call qa_fetch exactly once with url http://127.0.0.1:8080/face/qa-demo, then answer in one sentence with the body it returned. Do not report anything.")
	for _, tr := range rec.Turns() {
		t.Logf("turn %d: %+v validation=%+v tokens=%d/%d", tr.Index, tr.ProposedAction, tr.Validation, tr.ModelMetadata.TokensIn, tr.ModelMetadata.TokensOut)
	}
	t.Logf("outcome %s: %s", res.Outcome, res.Summary)
	if res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("outcome %s (%v), want done", res.Outcome, res.Err)
	}
	if rec.Footer.Totals.ToolCalls < 1 {
		t.Errorf("the model called no tool")
	}
	if rec.Footer.Totals.TokensIn == 0 {
		t.Log("the server reported no usage")
	}
}
