package openai_test

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"testing"

	oai "github.com/openai/openai-go/v3"
)

// referenceToolCall is the function-calling answer from OpenAI's chat
// completions API reference, verbatim but for the names.
const referenceToolCall = `{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1699896916,
  "model": "gpt-4o-mini",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_abc123",
            "type": "function",
            "function": {
              "name": "qa_fetch",
              "arguments": "{\n\"url\": \"http://127.0.0.1:8080/\"\n}"
            }
          }
        ]
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 82,
    "completion_tokens": 17,
    "total_tokens": 99,
    "completion_tokens_details": {
      "reasoning_tokens": 0,
      "accepted_prediction_tokens": 0,
      "rejected_prediction_tokens": 0
    }
  }
}`

// paths lists the key paths of a JSON value (array elements share a path).
func paths(v any, prefix string, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := prefix + "." + k
			out[p] = true
			paths(e, p, out)
		}
	case []any:
		for _, e := range v {
			paths(e, prefix+"[]", out)
		}
	}
}

func keyPaths(tb testing.TB, b []byte) map[string]bool {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatal(err)
	}
	out := map[string]bool{}
	paths(v, "", out)
	return out
}

// TestFixturesDecodeWithSDK checks the fake's answers against the SDK's
// response types (every field we read arrives, marked present) and against
// OpenAI's reference answer (no key the real API does not send).
func TestFixturesDecodeWithSDK(t *testing.T) {
	ref := keyPaths(t, []byte(referenceToolCall))
	// Keys the reference example happens not to show but the API sends.
	for _, k := range []string{".choices[].message.refusal", ".system_fingerprint"} {
		ref[k] = true
	}
	var refResp oai.ChatCompletion
	if err := json.Unmarshal([]byte(referenceToolCall), &refResp); err != nil {
		t.Fatal(err)
	}
	if tc := refResp.Choices[0].Message.ToolCalls[0]; tc.Function.Name != "qa_fetch" || tc.ID != "call_abc123" || refResp.Usage.PromptTokens != 82 {
		t.Fatalf("the SDK decoded the reference as %+v", refResp)
	}

	noUsage := text("bye")
	noUsage.Usage = nil
	for _, tc := range []struct {
		name  string
		c     wireCompletion
		check func(t *testing.T, r oai.ChatCompletion)
	}{
		{"tool call", toolCall("call_1", "qa_fetch", `{"url":"u"}`), func(t *testing.T, r oai.ChatCompletion) {
			tc := r.Choices[0].Message.ToolCalls[0]
			if tc.ID != "call_1" || tc.Type != "function" || tc.Function.Name != "qa_fetch" || tc.Function.Arguments != `{"url":"u"}` || !tc.JSON.ID.Valid() {
				t.Errorf("tool call decoded as %+v", tc)
			}
			if r.Choices[0].FinishReason != "tool_calls" || r.Choices[0].Message.Content != "" {
				t.Errorf("choice decoded as %+v", r.Choices[0])
			}
		}},
		{"text", text("all good"), func(t *testing.T, r oai.ChatCompletion) {
			if m := r.Choices[0].Message; m.Content != "all good" || len(m.ToolCalls) != 0 || m.Refusal != "" {
				t.Errorf("message decoded as %+v", m)
			}
			if u := r.Usage; u.PromptTokens != 120 || u.CompletionTokens != 30 || !u.JSON.PromptTokens.Valid() {
				t.Errorf("usage decoded as %+v", u)
			}
		}},
		{"refusal", refusal("no"), func(t *testing.T, r oai.ChatCompletion) {
			if m := r.Choices[0].Message; m.Refusal != "no" || !m.JSON.Refusal.Valid() {
				t.Errorf("message decoded as %+v", m)
			}
		}},
		{"no usage", noUsage, func(t *testing.T, r oai.ChatCompletion) {
			if r.JSON.Usage.Valid() || r.Usage.PromptTokens != 0 {
				t.Errorf("usage decoded as %+v", r.Usage)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var extra []string
			for k := range keyPaths(t, b) {
				if !ref[k] {
					extra = append(extra, k)
				}
			}
			sort.Strings(extra)
			if len(extra) > 0 {
				t.Errorf("the fake sends keys OpenAI does not: %v", extra)
			}
			var r oai.ChatCompletion
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.ID != "chatcmpl-fake" || r.Object != "chat.completion" || len(r.Choices) != 1 || !r.Choices[0].JSON.FinishReason.Valid() {
				t.Fatalf("decoded as %+v", r)
			}
			if unknown := slices.Collect(maps.Keys(r.JSON.ExtraFields)); len(unknown) > 0 {
				t.Errorf("fields unknown to the SDK: %v", unknown)
			}
			tc.check(t, r)
		})
	}
}
