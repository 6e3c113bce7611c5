package qatools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

type callArgs struct {
	Target  string  `json:"target" desc:"the name to call" maxlen:"256"`
	Message string  `json:"message" desc:"the message" maxlen:"16384"`
	From    string  `json:"from,omitempty" desc:"an identity to claim in the request body (probes whether the endpoint trusts it)" maxlen:"256"`
	RawBody *string `json:"raw_body,omitempty" desc:"send exactly this body instead of the JSON request (malformed-body probes); \"\" sends an empty body" maxlen:"65536"`
	// ContentType replaces application/json (wrong-content-type probes).
	ContentType string            `json:"content_type,omitempty" desc:"the request's Content-Type instead of application/json" maxlen:"256"`
	Headers     map[string]string `json:"headers,omitempty" desc:"extra request headers (not Cookie or Authorization: a session goes only through as)"`
	As          string            `json:"as,omitempty" desc:"send the request with the session of this identity (signed in by qa_login)" maxlen:"32"`
}

// forbiddenHeaders cannot be set through qa_call: they would change where or
// how the request goes, not what it says.
var forbiddenHeaders = map[string]bool{"host": true, "content-length": true, "transfer-encoding": true, "connection": true, "upgrade": true, "proxy-authorization": true, "te": true, "trailer": true}

// call: qa_call. Any HTTP answer is a successful probe (ok: true) with its
// status and a hint; only a request that got no answer fails.
func (t *tools) call(ctx context.Context, a callArgs) (fleet.Result, error) {
	url := t.env.Target.Call
	if url == "" {
		return fleet.Fail("target.call is not configured"), nil
	}
	var body []byte
	if a.RawBody != nil {
		body = []byte(*a.RawBody)
	} else {
		req := map[string]string{"target": a.Target, "message": a.Message}
		if a.From != "" {
			req["from"] = a.From
		}
		body, _ = json.Marshal(req)
	}
	ct := "application/json"
	if a.ContentType != "" {
		if strings.ContainsAny(a.ContentType, "\r\n") {
			return fleet.Fail("qa_call: content_type %q cannot be sent", a.ContentType), nil
		}
		ct = a.ContentType
	}
	for k, v := range a.Headers {
		if forbiddenHeaders[strings.ToLower(k)] || strings.ContainsAny(k+v, "\r\n") {
			return fleet.Fail("qa_call: header %q cannot be set", k), nil
		}
		// A header that carries a session (credentialName) never comes
		// from the model, so no cookie or token fleetd did not get by
		// signing in (a real user's) is replayed. Sessions go through as.
		if credentialName(k) {
			return fleet.Fail("qa_call: header %q carries a session: fleetd uses only sessions of identities it signed in (qa_login, then as)", k), nil
		}
	}
	sess, err := t.session(ctx, a.As)
	if err != nil {
		return fleet.Fail("qa_call: %v", err), nil
	}
	client := t.env.Call
	if client == nil {
		client = http.DefaultClient
	}
	return t.paced(ctx, url, func() (fleet.Result, error) {
		// The timeout covers the request, not the wait for its turn.
		ctx, cancel := context.WithTimeout(ctx, t.env.Limits.CallTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return fleet.Fail("qa_call: %v", err), nil
		}
		req.Header.Set("Content-Type", ct)
		req.Header.Set("User-Agent", "fleetd-qa/1")
		for k, v := range a.Headers {
			req.Header.Set(k, v)
		}
		sess.attach(req)
		return t.send(ctx, client, req, url)
	})
}

// send sends a qa_call request and reads the answer.
func (t *tools) send(ctx context.Context, client *http.Client, req *http.Request, url string) (fleet.Result, error) {
	resp, err := client.Do(req)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, cerr
		}
		res := fleet.Fail("qa_call %s: %v", url, unwrapURLError(err))
		res["hint"] = netHint(err)
		return res, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.env.Limits.MaxReply)+1))
	if err != nil {
		res := fleet.Fail("qa_call %s: reading reply: %v", url, err)
		res["hint"] = netHint(err)
		return res, nil
	}
	truncated := len(raw) > t.env.Limits.MaxReply
	if truncated {
		raw = raw[:t.env.Limits.MaxReply]
	}
	reply, isJSON := replyText(raw)
	text, _ := sandbox.Text([]byte(reply), t.env.Limits.MaxReply)
	res := fleet.OK(map[string]any{
		"status":       resp.StatusCode,
		"reply":        text,
		"json":         isJSON,
		"bytes":        len(raw),
		"truncated":    truncated,
		"content_type": resp.Header.Get("Content-Type"),
		"hint":         hint(resp.StatusCode, reply, isJSON, raw),
	})
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		res["retry_after"] = ra
	}
	return res, nil
}

// replyText extracts {"reply": ...} when the body is that JSON shape, else
// returns the body itself.
func replyText(raw []byte) (string, bool) {
	var v struct {
		Reply *string `json:"reply"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Reply != nil {
		return *v.Reply, true
	}
	return string(raw), false
}

// hint classifies an answer so a model (or playbook) can branch on it.
func hint(status int, reply string, isJSON bool, raw []byte) string {
	switch {
	case status >= 500 && crashSignatures.Match(raw) || status >= 500 && bytes.Contains(raw, []byte(".go:")):
		return "server_error_with_trace"
	case status >= 500:
		return "server_error"
	case status == http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "unauthorized"
	case status == http.StatusNotFound:
		return "not_found"
	case status >= 400:
		return "client_error"
	case !isJSON:
		return "not_json"
	case strings.TrimSpace(reply) == "":
		return "empty_reply"
	}
	return "ok"
}
