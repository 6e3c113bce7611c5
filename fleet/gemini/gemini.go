// Package gemini is a fleet.Model (a planner) backed by Google's Gemini API
// through google.golang.org/genai.
//
// The adapter is stateless between calls: every Next builds the whole request
// from the fleet.State it is given (the State is the transcript). The persona
// becomes the system instruction, the goal the first user turn, and every
// past exchange a model turn holding the functionCall followed by a user turn
// holding the functionResponse. Function declarations are generated from the
// argument schemas of the tools still enabled.
//
// The adapter never chooses a tool itself: it returns the first function call
// the model made, exactly as named, or Done with the model's text. Output it
// cannot use (no candidates, a blocked prompt, a malformed function call, a
// safety stop) is an error wrapping fleet.ErrMalformed, so the loop's repair
// retry applies. Rate limits (429), server errors (5xx) and dropped
// connections are retried with capped, jittered exponential backoff that
// honours Retry-After; other API errors end the run.
//
// Tool schemas go out as Gemini's OpenAPI-style Schema; a tool with a
// free-form argument (an object without properties, an array without items),
// which that form cannot express, is declared with JSON Schema instead. The
// thought signature Gemini attaches to a call travels in fleet.Call.ID, so
// the transcript alone is enough to send it back.
//
// genai types never leave this package.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"google.golang.org/genai"
)

// DefaultModel is the Gemini model used when Config.Model is empty.
const DefaultModel = "gemini-2.5-flash"

// DefaultMaxRetries is how many times a request is retried after a rate
// limit, a server error or a dropped connection when Config.MaxRetries is 0.
const DefaultMaxRetries = 4

// Retry timing. A server's own hint (Retry-After, google.rpc.RetryInfo) is
// honoured up to maxHintWait; a longer one ends the retries instead of
// waiting less than the server asked.
const (
	initialBackoff = time.Second
	maxBackoff     = 30 * time.Second
	maxHintWait    = 2 * time.Minute
	// attemptTimeout bounds one HTTP attempt, so a server that accepts the
	// request and never answers costs a retry, not the whole run.
	attemptTimeout = 5 * time.Minute
)

// Log keys.
const (
	logKeyModel   = "model"
	logKeyAttempt = "attempt"
	logKeyWait    = "wait"
	logKeyStatus  = "status"
	logKeyErr     = "err"
)

// Config configures a Model.
type Config struct {
	// APIKey is the Gemini API key (required). It is sent in the
	// X-Goog-Api-Key header and never appears in errors or logs.
	APIKey string
	// Model is the Gemini model name; empty means DefaultModel.
	Model string
	// BaseURL overrides the API endpoint (test servers, proxies).
	BaseURL string
	// Temperature is the sampling temperature; nil leaves the model's default.
	Temperature *float32
	// MaxOutputTokens caps one reply; 0 leaves the model's default.
	MaxOutputTokens int32
	// MaxRetries is how many times one request is retried after a 429, a
	// 5xx or a dropped connection: 0 means DefaultMaxRetries, negative none.
	MaxRetries int
	// Logger receives one line per retry; nil discards.
	Logger *slog.Logger
	// HTTPClient is the client requests go through; nil means a new
	// http.Client. It is copied, not modified.
	HTTPClient *http.Client
}

// Model is a fleet.Model that asks Gemini for the next step. It is safe for
// concurrent use by several runs.
type Model struct {
	client      *genai.Client
	model       string
	apiKey      string // only to scrub it from errors
	temperature *float32
	maxOutput   int32
	maxRetries  int
	log         *slog.Logger

	// Test hooks: how to wait between retries and the first backoff step.
	sleep   func(ctx context.Context, d time.Duration) error
	backoff time.Duration
}

var _ fleet.Model = (*Model)(nil)

// New returns a Model for cfg. It fails when the API key is missing or the
// SDK client cannot be built; it makes no request.
func New(ctx context.Context, cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("new gemini model: no API key")
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &captureTransport{base: base}

	m := &Model{
		model:       cfg.Model,
		apiKey:      cfg.APIKey,
		temperature: cfg.Temperature,
		maxOutput:   cfg.MaxOutputTokens,
		maxRetries:  cfg.MaxRetries,
		log:         logger.With(slog.String("component", "gemini"), slog.String(logKeyModel, cfg.Model)),
		sleep:       fleet.Sleep,
		backoff:     initialBackoff,
	}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      cfg.APIKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL},
	})
	if err != nil {
		return nil, m.scrub(fmt.Errorf("new gemini model: %w", err))
	}
	m.client = client
	return m, nil
}

// Name returns the Gemini model name requests use.
func (m *Model) Name() string { return m.model }

// Next asks the model for its next step given the run so far. It returns a
// Step with a Call (the first function call the model made, unchanged), or
// Done with the model's plain-text summary. Unusable output is an error
// wrapping fleet.ErrMalformed, returned together with the Step's Usage. An
// API error that is not retryable, or whose retries ran out, is a
// *StatusError (wrapped); cancellation returns an error wrapping ctx's.
//
// Call.ID carries the provider's call id and, when the model signed its
// call, the thought signature Gemini needs to see again with the call on the
// next turns; it is opaque to the host and must be echoed back unchanged.
func (m *Model) Next(ctx context.Context, s *fleet.State) (fleet.Step, error) {
	contents, gcfg, err := m.request(s)
	if err != nil {
		return fleet.Step{}, err
	}
	resp, err := m.generate(ctx, contents, gcfg)
	if err != nil {
		return fleet.Step{}, err
	}
	return parse(resp)
}

// StatusError is an error answer from the Gemini API.
type StatusError struct {
	Code    int    // HTTP status code
	Status  string // API status, e.g. RESOURCE_EXHAUSTED
	Message string // the API's message, with the API key removed
}

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gemini api: %d", e.Code)
	if e.Status != "" {
		b.WriteString(" " + e.Status)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// scrubbed is an error whose text had the API key removed; it still unwraps
// to the original so errors.Is keeps working.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// minKeyLen is the shortest key scrubbed from text: replacing a one-letter
// test key everywhere would only garble messages.
const minKeyLen = 8

func (m *Model) scrubText(s string) string {
	if len(m.apiKey) < minKeyLen {
		return s
	}
	return strings.ReplaceAll(s, m.apiKey, "[REDACTED]")
}

func (m *Model) scrub(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); m.scrubText(msg) != msg {
		return &scrubbed{msg: m.scrubText(msg), err: err}
	}
	return err
}
