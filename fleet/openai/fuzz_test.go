package openai

import (
	"encoding/json"
	"errors"
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/qafleet/fleetd/fleet"
)

// FuzzDecide feeds arbitrary server answers through the SDK's decoder and
// decide: it must never panic, and a call it returns must carry valid JSON
// arguments (or none); anything else is ErrMalformed.
func FuzzDecide(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"qa_fetch","arguments":"{\"url\":\"u\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`{"choices":[{"message":{"content":"done"},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"qa_compile","arguments":"{\"source\": "}}]}}]}`,
		`{"choices":[{"message":{"refusal":"no"}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"type":"custom","custom":{"name":"x","input":"y"}}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"qa_create","arguments":""}}]}}]}`,
		`{"choices":[{"message":{"content":""},"finish_reason":"length"}]}`,
		`{"choices":[]}`,
		`{"choices":null,"usage":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var resp oai.ChatCompletion
		if json.Unmarshal(body, &resp) != nil {
			return
		}
		call, summary, err := decide(&resp)
		switch {
		case err != nil:
			if !errors.Is(err, fleet.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if call != nil || summary != "" {
				t.Fatalf("an error with a step: %+v %q", call, summary)
			}
		case call != nil:
			if call.Tool == "" || (len(call.Args) > 0 && !json.Valid(call.Args)) {
				t.Fatalf("bad call %+v", call)
			}
		case summary == "":
			t.Fatal("neither a call, a summary nor an error")
		}
	})
}

// FuzzBodyMessage: any error body yields a short message without panicking.
func FuzzBodyMessage(f *testing.F) {
	for _, seed := range []string{`{"error":{"message":"m"}}`, `{"error":"s"}`, `{"detail":[{"loc":1}]}`, "plain", ""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if msg := bodyMessage(body); len(msg) > 503 {
			t.Fatalf("message of %d bytes", len(msg))
		}
	})
}
