package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/qafleet/fleetd/clip"
)

// APIError is an error status from the server: a non-retryable one (400,
// 401, 404, ...) at once, a retryable one (429, 5xx) once the retries ran
// out. Message is the server's own, with the API key scrubbed out.
type APIError struct {
	StatusCode int
	Type       string // the server's error type, e.g. invalid_request_error
	Code       string // the server's error code, e.g. invalid_api_key
	Message    string
	Attempts   int // requests made, retries included
}

// Error names the status, the attempts and the server's message.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: status %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	var detail []string
	if e.Type != "" {
		detail = append(detail, "type "+e.Type)
	}
	if e.Code != "" {
		detail = append(detail, "code "+e.Code)
	}
	if len(detail) > 0 {
		b.WriteString(" (" + strings.Join(detail, ", ") + ")")
	}
	return b.String()
}

// maxBody bounds a response body; a chat answer is far smaller.
const maxBody = 32 << 20

// attempt is what the middleware saw of the latest attempt of one request.
type attempt struct {
	n      int    // attempts made
	status int    // the last attempt's status, 0 when it got no response
	body   []byte // the start of the last body, for an error status
}

// attempts returns a middleware that reads each response body whole inside
// the SDK's retry loop, so a connection dropped mid-response is a failed
// attempt that the SDK retries (after the loop the SDK would only report
// it). It also keeps the status and the start of an error body: the SDK
// loses both when the body is not OpenAI's error JSON.
func (m *Model) attempts(last *attempt) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		last.n++
		last.status, last.body = 0, nil
		res, err := next(req)
		if err == nil {
			var body []byte
			body, err = io.ReadAll(io.LimitReader(res.Body, maxBody+1))
			_ = res.Body.Close()
			switch {
			case err != nil:
				err = fmt.Errorf("read response: %w", err)
			case len(body) > maxBody:
				err = fmt.Errorf("read response: longer than %d bytes", maxBody)
			default:
				res.Body = io.NopCloser(bytes.NewReader(body))
				last.status = res.StatusCode
				if res.StatusCode >= 400 {
					last.body = body[:min(len(body), 4096)]
				}
				if retryable(res.StatusCode) {
					m.logger.WarnContext(req.Context(), "model request failed", "attempt", last.n, "status", res.StatusCode, "retry_after", res.Header.Get("Retry-After"))
				}
				return res, nil
			}
		}
		if req.Context().Err() == nil { // a cancelled call is the caller's business
			m.logger.WarnContext(req.Context(), "model request failed", "attempt", last.n, "err", m.scrub(err).Error())
		}
		return nil, err
	}
}

// retryable mirrors the statuses the SDK retries.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// requestError converts a failed request into an error that holds no SDK
// type and no API key.
func (m *Model) requestError(ctx context.Context, err error, last *attempt) error {
	var ae *oai.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("openai: chat completion: %w", err)
	case errors.Is(err, context.DeadlineExceeded):
		// The SDK's per-attempt timeout, not the caller's deadline.
		return fmt.Errorf("openai: no answer within the request timeout %v: %w", m.timeout, err)
	case errors.As(err, &ae):
		e := &APIError{StatusCode: ae.StatusCode, Type: ae.Type, Code: ae.Code, Message: ae.Message, Attempts: last.n}
		if e.Message == "" {
			e.Message = bodyMessage(last.body)
		}
		e.Message = m.redact(e.Message)
		return e
	case last.status >= 400:
		// The SDK failed to decode the error body and lost the status.
		return &APIError{StatusCode: last.status, Message: m.redact(bodyMessage(last.body)), Attempts: last.n}
	}
	if last.n > 1 {
		err = fmt.Errorf("after %d attempts: %w", last.n, err)
	}
	return m.scrub(fmt.Errorf("openai: chat completion: %w", err))
}

// bodyMessage finds the message in an error body that is not OpenAI's
// {"error":{"message":...}}: {"error":"..."}, {"message":"..."},
// {"detail":"..."}, or plain text.
func bodyMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var s string
		var obj struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return clip.Text(s, 500)
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return clip.Text(obj.Message, 500)
		case v.Message != "":
			return clip.Text(v.Message, 500)
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return clip.Text(s, 500)
		case len(v.Detail) > 0:
			return clip.Text(string(v.Detail), 500)
		}
	}
	return clip.Text(strings.Join(strings.Fields(string(body)), " "), 500)
}

// redact removes the API key from s.
func (m *Model) redact(s string) string {
	if m.key == "" {
		return s
	}
	return strings.ReplaceAll(s, m.key, "[redacted]")
}

// scrub returns err, or an error with the same chain whose message has the
// API key removed.
func (m *Model) scrub(err error) error {
	if m.key == "" || !strings.Contains(err.Error(), m.key) {
		return err
	}
	return &scrubbed{msg: m.redact(err.Error()), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
