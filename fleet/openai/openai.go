// Package openai is a fleet.Model that plans with any server speaking the
// OpenAI chat completions protocol: Ollama, vLLM, the llama.cpp server, or
// OpenAI itself. It is a thin adapter over the official SDK
// (github.com/openai/openai-go/v3); no SDK type crosses its API.
//
// The model is stateless: every Next builds the whole chat from the
// fleet.State (system preamble + persona, the goal, one assistant tool call
// and one tool result per past exchange, a note after malformed output) and
// turns the first tool call of the answer into a fleet.Call. It never makes a
// call the model did not choose: output it cannot use is an error wrapping
// fleet.ErrMalformed, and the loop decides what happens next.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
)

// DefaultBaseURL is OpenAI's API, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults for the zero values of Config.
const (
	DefaultMaxRetries     = 4
	DefaultRequestTimeout = 10 * time.Minute
)

// Config configures a Model. Only Model is required.
type Config struct {
	// BaseURL is the server's OpenAI-compatible root, e.g.
	// http://127.0.0.1:11434/v1 for Ollama (default DefaultBaseURL).
	BaseURL string
	// APIKey is sent as a bearer token; local servers usually need none. It
	// is never read from the environment here, never logged and scrubbed
	// from errors.
	APIKey string
	// Model is the model name the server knows, e.g. "qwen2.5:7b".
	Model string
	// Temperature is sent when set; nil leaves the server's default.
	Temperature *float64
	// MaxTokens caps each answer (sent as max_tokens, which Ollama, vLLM and
	// llama.cpp read); 0 leaves the server's default.
	MaxTokens int64
	// MaxRetries is how many times one request is retried after a dropped
	// connection, 408, 409, 429 or 5xx (default DefaultMaxRetries; negative:
	// never). Waits follow Retry-After / Retry-After-Ms, else exponential
	// backoff from 0.5 s with jitter, capped at 8 s.
	MaxRetries int
	// RequestTimeout bounds each attempt (default DefaultRequestTimeout,
	// generous because local models on a CPU are slow; negative: no limit
	// beyond ctx).
	RequestTimeout time.Duration
	// Logger receives one warning per failed attempt and one debug line per
	// answer (nil: discard).
	Logger *slog.Logger
	// HTTPClient carries the requests (nil: a client of its own).
	HTTPClient *http.Client
}

// Model is a fleet.Model backed by an OpenAI-compatible chat completions
// endpoint. It is safe for concurrent use; it keeps no state between calls.
type Model struct {
	chat    oai.ChatCompletionService
	model   string
	temp    *float64
	max     int64
	key     string
	timeout time.Duration
	logger  *slog.Logger
}

var _ fleet.Model = (*Model)(nil)

// New returns a Model for cfg. It fails when Model is empty or BaseURL is
// not an absolute http(s) URL; it makes no request.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: model: required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("openai: base url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base url %q: want an absolute http(s) URL such as http://127.0.0.1:11434/v1", base)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	timeout := cfg.RequestTimeout
	switch {
	case timeout == 0:
		timeout = DefaultRequestTimeout
	case timeout < 0:
		timeout = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Model{model: cfg.Model, temp: cfg.Temperature, max: cfg.MaxTokens, key: cfg.APIKey, timeout: timeout, logger: logger.With("component", "openai", "model", cfg.Model)}
	opts := []option.RequestOption{
		option.WithBaseURL(u.String()),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(retries),
		option.WithRequestTimeout(timeout),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// NewChatCompletionService, not NewClient: NewClient also reads
	// OPENAI_API_KEY, OPENAI_BASE_URL and friends from the environment, which
	// would send an OpenAI key to a local server nobody configured it for.
	m.chat = oai.NewChatCompletionService(opts...)
	return m, nil
}

// preamble opens every system message, before the persona.
const preamble = `You are a QA probe run by fleetd against an on-chain app platform.
Work only through the tools you are given: call exactly one tool per turn and read its JSON result before deciding the next step.
Report every problem you confirm with qa_report, with a repro.
Never invent tool results, findings or evidence: state only what the tools returned.
When you are finished, answer in plain text without a tool call: what you checked and what you found.`

// Next asks the server for the model's next step. The returned Step carries
// the tokens the answer cost, also alongside an error. Errors wrap
// fleet.ErrMalformed when the server answered but the answer is no usable
// step (broken tool arguments, a refusal, a truncated or filtered answer,
// no choices); *APIError when the server refused the request (after
// retries, for retryable statuses); otherwise a transport or context error.
func (m *Model) Next(ctx context.Context, s *fleet.State) (fleet.Step, error) {
	params, err := m.params(s)
	if err != nil {
		return fleet.Step{}, err
	}
	var last attempt
	resp, err := m.chat.New(ctx, params, option.WithMiddleware(m.attempts(&last)))
	if err != nil {
		return fleet.Step{}, m.requestError(ctx, err, &last)
	}
	step := fleet.Step{Usage: fleet.Usage{TokensIn: resp.Usage.PromptTokens, TokensOut: resp.Usage.CompletionTokens}}
	call, summary, err := decide(resp)
	if err != nil {
		return step, err
	}
	if m.logger.Enabled(ctx, slog.LevelDebug) {
		calls := 0
		if len(resp.Choices) > 0 {
			calls = len(resp.Choices[0].Message.ToolCalls) // all but the first are dropped
		}
		m.logger.DebugContext(ctx, "model answered", "turn", s.Turn, "tokens_in", step.Usage.TokensIn, "tokens_out", step.Usage.TokensOut, "tool", toolName(call), "tool_calls", calls)
	}
	if call != nil {
		step.Call = call
		return step, nil
	}
	step.Done, step.Summary = true, summary
	return step, nil
}

func toolName(c *fleet.Call) string {
	if c == nil {
		return ""
	}
	return c.Tool
}

// params builds the whole request from the state.
func (m *Model) params(s *fleet.State) (oai.ChatCompletionNewParams, error) {
	msgs, err := messages(s)
	if err != nil {
		return oai.ChatCompletionNewParams{}, err
	}
	tools, err := toolParams(s.Tools)
	if err != nil {
		return oai.ChatCompletionNewParams{}, err
	}
	p := oai.ChatCompletionNewParams{Model: m.model, Messages: msgs, Tools: tools}
	if len(tools) > 0 {
		// OpenAI refuses both fields on a request without tools.
		p.ToolChoice = oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oai.String(string(oai.ChatCompletionToolChoiceOptionAutoAuto))}
		p.ParallelToolCalls = oai.Bool(false)
	}
	if m.temp != nil {
		p.Temperature = oai.Float(*m.temp)
	}
	if m.max > 0 {
		p.MaxTokens = oai.Int(m.max)
	}
	return p, nil
}

// messages renders the state as a chat.
func messages(s *fleet.State) ([]oai.ChatCompletionMessageParamUnion, error) {
	system := preamble
	if p := strings.TrimSpace(s.Persona); p != "" {
		system += "\n\n" + p
	}
	goal := strings.TrimSpace(s.Goal)
	if goal == "" {
		goal = "Probe the platform with the tools you have."
	}
	msgs := make([]oai.ChatCompletionMessageParamUnion, 0, 2+2*len(s.History)+1)
	msgs = append(msgs, oai.SystemMessage(system), oai.UserMessage(goal))
	for i, ex := range s.History {
		id := CallID(ex.Call, i)
		args := string(bytes.TrimSpace(ex.Call.Args))
		if args == "" {
			args = "{}"
		}
		result, err := encodeResult(ex.Result)
		if err != nil {
			return nil, fmt.Errorf("openai: encode result of exchange %d (%s): %w", i, ex.Call.Tool, err)
		}
		msgs = append(msgs,
			oai.ChatCompletionMessageParamUnion{OfAssistant: &oai.ChatCompletionAssistantMessageParam{
				ToolCalls: []oai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID:       id,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: ex.Call.Tool, Arguments: args},
				}}},
			}},
			oai.ToolMessage(result, id),
		)
	}
	if s.Retry != "" {
		msgs = append(msgs, oai.UserMessage("Your previous reply could not be used: "+s.Retry+
			"\nReply again with exactly one tool call whose arguments are a JSON object matching the tool's schema, or, if you are finished, with a plain-text answer."))
	}
	return msgs, nil
}

// encodeResult renders a tool result as compact JSON with sorted keys,
// leaving <, > and & alone: pages and reverts are full of them, and
// \u003c escapes cost the model tokens and readability.
func encodeResult(r fleet.Result) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// CallID is the tool_call id an exchange is sent under: the provider's id
// when it gave one, else "call_<index>", stable across turns so each tool
// message always matches its call.
func CallID(c fleet.Call, index int) string {
	if c.ID != "" {
		return c.ID
	}
	return "call_" + strconv.Itoa(index)
}

// toolParams declares one function per tool; the parameters are the tool's
// fleet.Schema, which is already JSON Schema.
func toolParams(tools []fleet.Tool) ([]oai.ChatCompletionToolUnionParam, error) {
	var out []oai.ChatCompletionToolUnionParam // nil, not empty: OpenAI refuses "tools": []
	for _, t := range tools {
		params, err := schemaParams(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("openai: schema of tool %s: %w", t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = oai.String(t.Description)
		}
		out = append(out, oai.ChatCompletionFunctionTool(def))
	}
	return out, nil
}

func schemaParams(s *fleet.Schema) (shared.FunctionParameters, error) {
	params := shared.FunctionParameters{}
	if s != nil {
		b, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &params); err != nil {
			return nil, err
		}
	}
	if params["type"] == nil {
		params["type"] = "object"
	}
	// fleet.Schema omits an empty property list; some servers' tool parsers
	// want an object schema to have one.
	if params["type"] == "object" && params["properties"] == nil {
		params["properties"] = map[string]any{}
	}
	return params, nil
}

// decide turns an answer into a call or a final summary, or explains why it
// is neither.
func decide(resp *oai.ChatCompletion) (*fleet.Call, string, error) {
	if len(resp.Choices) == 0 {
		return nil, "", fmt.Errorf("openai: the answer has no choices: %w", fleet.ErrMalformed)
	}
	choice := resp.Choices[0]
	msg := choice.Message
	if r := strings.TrimSpace(msg.Refusal); r != "" {
		return nil, "", fmt.Errorf("openai: the model refused: %q: %w", clip.Text(r, 300), fleet.ErrMalformed)
	}
	if len(msg.ToolCalls) > 0 {
		call, err := toCall(msg.ToolCalls[0])
		return call, "", err
	}
	switch choice.FinishReason {
	case "content_filter":
		return nil, "", fmt.Errorf("openai: the answer was withheld by the server's content filter: %w", fleet.ErrMalformed)
	case "length":
		return nil, "", fmt.Errorf("openai: the answer hit the token limit before a tool call or a complete reply: %w", fleet.ErrMalformed)
	}
	text := strings.TrimSpace(msg.Content)
	if text == "" {
		return nil, "", fmt.Errorf("openai: the answer holds neither a tool call nor text (finish_reason %q): %w", choice.FinishReason, fleet.ErrMalformed)
	}
	return nil, text, nil
}

// toCall converts the model's tool call as it is: arguments that are not
// JSON are reported, never repaired.
func toCall(tc oai.ChatCompletionMessageToolCallUnion) (*fleet.Call, error) {
	if tc.Type != "" && tc.Type != "function" {
		return nil, fmt.Errorf("openai: the model made a %q tool call; only functions are declared: %w", tc.Type, fleet.ErrMalformed)
	}
	name := tc.Function.Name
	if name == "" {
		return nil, fmt.Errorf("openai: the model's tool call names no function: %w", fleet.ErrMalformed)
	}
	call := &fleet.Call{Tool: name, ID: tc.ID}
	args := bytes.TrimSpace([]byte(tc.Function.Arguments))
	if len(args) == 0 {
		return call, nil // no arguments: the host reads an empty Args as {}
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fmt.Errorf("openai: tool call %s: arguments are not valid JSON (%v): %q: %w", name, err, clip.Text(string(args), 200), fleet.ErrMalformed)
	}
	call.Args = json.RawMessage(args)
	return call, nil
}
