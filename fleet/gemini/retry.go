package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/clip"
	"google.golang.org/genai"
)

// generate sends one generateContent request, retrying rate limits, server
// errors and dropped connections (the SDK itself does not retry by default).
func (m *Model) generate(ctx context.Context, contents []*genai.Content, gcfg *genai.GenerateContentConfig) (*genai.GenerateContentResponse, error) {
	for attempt := 0; ; attempt++ {
		info := &attemptInfo{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, info), attemptTimeout)
		resp, err := m.client.Models.GenerateContent(actx, m.model, contents, gcfg)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("gemini generate: %w", context.Cause(ctx))
		}
		final, retryable, hint := m.classify(err, info, timedOut)
		if !retryable || attempt >= m.maxRetries {
			if retryable {
				plural := "s"
				if attempt == 0 {
					plural = ""
				}
				return nil, fmt.Errorf("gemini generate: giving up after %d attempt%s: %w", attempt+1, plural, final)
			}
			return nil, fmt.Errorf("gemini generate: %w", final)
		}
		wait, ok := m.delay(attempt, hint)
		if !ok {
			return nil, fmt.Errorf("gemini generate: the server asked to wait %s, longer than the %s this adapter waits: %w", hint, maxHintWait, final)
		}
		m.log.Warn("gemini request failed, retrying",
			slog.Int(logKeyAttempt, attempt+1), slog.Duration(logKeyWait, wait),
			slog.Int(logKeyStatus, info.statusCode()), slog.String(logKeyErr, final.Error()))
		if err := m.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("gemini generate: waiting to retry: %w", err)
		}
	}
}

// classify turns an attempt's error into the error to report (scrubbed of
// the API key), whether it is worth retrying, and the server's wait hint.
func (m *Model) classify(err error, info *attemptInfo, timedOut bool) (final error, retryable bool, hint time.Duration) {
	var ae genai.APIError
	if errors.As(err, &ae) {
		code := info.statusCode()
		if code == 0 {
			code = ae.Code
		}
		se := &StatusError{Code: code, Status: ae.Status, Message: clip.Text(m.scrubText(strings.TrimSpace(ae.Message)), 500)}
		if se.Status == "" || strings.HasPrefix(se.Status, strconv.Itoa(code)) {
			se.Status = apiStatus(code) // a non-JSON error body: the SDK put the HTTP status line here
		}
		hint = parseRetryAfter(info.retryAfterHeader(), time.Now())
		if hint == 0 {
			hint = retryInfo(ae.Details)
		}
		return se, code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500, hint
	}
	if ne := info.netError(); ne != nil || timedOut {
		// The connection failed or dropped, before or during the response:
		// as transient as a 5xx.
		if timedOut {
			return m.scrub(fmt.Errorf("no answer within %s: %w", attemptTimeout, err)), true, 0
		}
		return m.scrub(fmt.Errorf("connection failed: %w", err)), true, 0
	}
	return m.scrub(err), false, 0
}

// delay is the wait before retry number attempt+1: the server's hint when it
// gave one (honoured exactly, plus up to 10% jitter), else exponential
// backoff with jitter capped at maxBackoff. ok is false when the hint is
// longer than maxHintWait.
func (m *Model) delay(attempt int, hint time.Duration) (time.Duration, bool) {
	if hint > 0 {
		if hint > maxHintWait {
			return 0, false
		}
		return hint + rand.N(hint/10+1), true
	}
	d := maxBackoff
	if attempt < 16 {
		d = min(m.backoff<<attempt, maxBackoff)
	}
	return d/2 + rand.N(d/2+1), true
}

// parseRetryAfter reads a Retry-After header: delta seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 1e6 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// retryInfo reads the google.rpc.RetryInfo detail Gemini puts in its 429
// answers: {"@type": ".../google.rpc.RetryInfo", "retryDelay": "32s"}.
func retryInfo(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		if s, _ := d["retryDelay"].(string); s != "" {
			if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
				return dur
			}
		}
	}
	return 0
}

// apiStatus is the Google API status name of an HTTP code, for errors whose
// body did not say.
func apiStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 500:
		return "INTERNAL"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return http.StatusText(code)
}

// The SDK returns neither response headers of an error answer nor a typed
// error for a dropped connection, so the HTTP client's transport records
// both for each attempt, found through the request's context.

type attemptKey struct{}

type attemptInfo struct {
	mu         sync.Mutex
	status     int
	retryAfter string
	netErr     error
}

func (a *attemptInfo) statusCode() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

func (a *attemptInfo) retryAfterHeader() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.retryAfter
}

func (a *attemptInfo) netError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.netErr
}

func (a *attemptInfo) failed(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.netErr == nil {
		a.netErr = err
	}
}

type captureTransport struct {
	base http.RoundTripper
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(attemptKey{}).(*attemptInfo)
	resp, err := t.base.RoundTrip(req)
	if info == nil {
		return resp, err
	}
	if err != nil {
		info.failed(err)
		return resp, err
	}
	info.mu.Lock()
	info.status, info.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	info.mu.Unlock()
	resp.Body = &captureBody{ReadCloser: resp.Body, info: info}
	return resp, nil
}

// captureBody notes a connection that drops while the body is read.
type captureBody struct {
	io.ReadCloser
	info *attemptInfo
}

func (b *captureBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.info.failed(err)
	}
	return n, err
}
