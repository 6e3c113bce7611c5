package qatools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// submitArgs are qa_submit's arguments: one request with a body, as a form
// or a script of the platform would send it.
type submitArgs struct {
	URL    string `json:"url" desc:"an http(s) URL on target.fetch_allow (a form's action, an API resource)" maxlen:"2048"`
	Method string `json:"method,omitempty" enum:"POST,PUT,PATCH,DELETE" desc:"POST (default), PUT, PATCH, or DELETE (no body) of a URL an earlier POST of this run created (its result's created)"`
	// Enctype is how the body is encoded, as an HTML form's enctype says.
	Enctype string            `json:"enctype,omitempty" enum:"form,multipart,json" desc:"form (application/x-www-form-urlencoded, the default), multipart (multipart/form-data) or json (the json argument as the body)"`
	Fields  map[string]string `json:"fields,omitempty" desc:"the form's fields, name to value (form and multipart)"`
	JSON    string            `json:"json,omitempty" desc:"the body for enctype json: a JSON value" maxlen:"65536"`
	As      string            `json:"as,omitempty" desc:"send it with the session of this identity (signed in by qa_login)" maxlen:"32"`
}

// maxSubmitFields bounds a submitted form.
const maxSubmitFields = 64

// submit: qa_submit. A request that changes the platform's state, so it
// needs the exercise rung and spends one write from the run's meter before
// anything is sent; every fence of qa_fetch holds (the allowlist, special
// addresses, redirects re-checked hop by hop, pacing).
func (t *tools) submit(ctx context.Context, a submitArgs) (fleet.Result, error) {
	if t.env.Fetcher == nil {
		return fleet.Fail("qa_submit: target.fetch_allow is not configured"), nil
	}
	var in Request
	if a.Method == http.MethodDelete {
		if len(a.Fields) > 0 || a.JSON != "" || a.Enctype != "" {
			return fleet.Fail("qa_submit: a DELETE sends no body"), nil
		}
		if !t.createdHere(a.URL) {
			return fleet.Fail("qa_submit: %v", errNotCreated(a.URL)), nil
		}
		in = Request{URL: a.URL, Method: a.Method, undo: true}
	} else {
		body, ct, err := submitBody(a)
		if err != nil {
			return fleet.Fail("qa_submit: %v", err), nil
		}
		in = Request{URL: a.URL, Method: a.Method, Body: body, ContentType: ct}
	}
	sess, err := t.session(ctx, a.As)
	if err != nil {
		return fleet.Fail("qa_submit: %v", err), nil
	}
	in.session = sess
	if in.Method == "" {
		in.Method = http.MethodPost
	}
	// Refusals that need no request spend nothing.
	if err := t.env.Fetcher.check(in); err != nil {
		return fleet.Fail("qa_submit: %v", err), nil
	}
	if err := t.spendWrite(); err != nil {
		return nil, err
	}
	res, err := t.paced(ctx, a.URL, func() (fleet.Result, error) {
		res, err := t.env.Fetcher.Do(ctx, in)
		if err != nil {
			return nil, ctxErr(ctx)
		}
		return res, nil
	})
	if res != nil {
		if st, _ := res["status"].(int); in.undo && (st >= 200 && st <= 299 || st == http.StatusNotFound || st == http.StatusGone) {
			t.undone(a.URL)
		}
		t.writesLeft(res)
		if in.Method == http.MethodPost && res.IsOK() {
			if u := CreatedURL(a.URL, res); u != "" {
				t.remember(u)
				res["created"] = u
			}
		}
	}
	return res, err
}

// submitBody encodes a's body and returns it with its Content-Type.
func submitBody(a submitArgs) ([]byte, string, error) {
	if len(a.Fields) > maxSubmitFields {
		return nil, "", fmt.Errorf("%d fields, at most %d", len(a.Fields), maxSubmitFields)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range a.Fields {
			if !yield(k) {
				return
			}
		}
	})
	switch a.Enctype {
	case "", "form":
		if a.JSON != "" {
			return nil, "", errors.New("json is the body of enctype json; a form sends fields")
		}
		v := url.Values{}
		for _, k := range names {
			v.Set(k, a.Fields[k])
		}
		return []byte(v.Encode()), "application/x-www-form-urlencoded", nil
	case "multipart":
		if a.JSON != "" {
			return nil, "", errors.New("json is the body of enctype json; a form sends fields")
		}
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for _, k := range names {
			if err := w.WriteField(k, a.Fields[k]); err != nil {
				return nil, "", fmt.Errorf("field %q: %w", k, err)
			}
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
		return b.Bytes(), w.FormDataContentType(), nil
	case "json":
		if len(a.Fields) > 0 {
			return nil, "", errors.New("enctype json sends the json argument, not fields")
		}
		if !json.Valid([]byte(a.JSON)) {
			return nil, "", errors.New("json is not a valid JSON value")
		}
		return []byte(a.JSON), "application/json", nil
	}
	return nil, "", fmt.Errorf("enctype %q: want form, multipart or json", a.Enctype)
}

// check refuses, before anything is sent, what Do would refuse without a
// request: a bad method or origin, a URL off the allowlist or with a
// credential in its query.
func (f *Fetcher) check(in Request) error {
	if _, err := methodOf(in); err != nil {
		return err
	}
	if err := checkOrigin(in.Origin); err != nil {
		return err
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return fmt.Errorf("bad url %q: %v", in.URL, err)
	}
	if _, _, err := f.allow.match(u); err != nil {
		return err
	}
	return credentialErr(u)
}

// methodOf is in's method, checked: the safe methods without a body, the
// writing ones (POST, PUT, PATCH) only with one (qa_submit's), DELETE only
// as qa_submit's undo of what its run created.
func methodOf(in Request) (string, error) {
	method := strings.ToUpper(in.Method)
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodDelete:
		if !in.undo {
			return "", fmt.Errorf("method %q: only qa_submit deletes, and only what its run created", in.Method)
		}
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		if in.ContentType == "" {
			return "", fmt.Errorf("method %q: qa_fetch sends only GET, HEAD and OPTIONS (qa_submit sends a body)", in.Method)
		}
		return method, nil
	default:
		return "", fmt.Errorf("method %q: qa_fetch sends only GET, HEAD and OPTIONS", in.Method)
	}
	if in.ContentType != "" || in.Body != nil {
		return "", fmt.Errorf("method %s sends no body", method)
	}
	return method, nil
}
