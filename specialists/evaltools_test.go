package specialists

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/specialists/replay"
)

// evalWrites is the write budget of the evaluations' runs: fleetd's
// default (cmd/fleetd DefaultBudget.MaxWrites).
const evalWrites = 20

// httpTools are the tools of the evaluations on platforms without a chain
// (webapp, spa, tricks): qa_fetch, qa_call and qa_submit over the
// platform's HTTP (fetchClient, callClient), qa_report collecting the
// findings, the rest "not configured". qa_submit has a write budget of
// evalWrites per run.
func httpTools(tg fleet.Target, fetchClient, callClient *http.Client) func(string, *[]map[string]any) *fleet.Registry {
	return httpToolsCounted(tg, fetchClient, callClient, evalWrites, nil)
}

// writeCount is what qa_submit sent in the runs of an httpToolsCounted.
type writeCount struct {
	writes int      // requests sent
	urls   []string // method and URL of each

	mu   sync.Mutex
	page map[string]bool // what the browser's allowed writes' answers named created
}

// pageCreated records u as created by a write the run's browser sent (as
// qatools.PageWrites.Created does): qa_submit may DELETE it.
func (c *writeCount) pageCreated(u string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.page == nil {
		c.page = map[string]bool{}
	}
	c.page[u] = true
}

func (c *writeCount) fromPage(u string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.page[u]
}

// httpToolsCounted is httpTools with a write budget of maxWrites per run
// and, when count is set, every qa_submit counted in it.
func httpToolsCounted(tg fleet.Target, fetchClient, callClient *http.Client, maxWrites int, count *writeCount) func(string, *[]map[string]any) *fleet.Registry {
	return func(runID string, findings *[]map[string]any) *fleet.Registry {
		reg := fleet.NewRegistry()
		add := func(name string, rung fleet.Dial, fn func(a map[string]any) (fleet.Result, error)) {
			tool, _ := fleettest.Tool(name, rung, func(ctx context.Context, raw json.RawMessage) (fleet.Result, error) {
				var a map[string]any
				if err := json.Unmarshal(raw, &a); err != nil {
					return fleet.Fail("bad args: %v", err), nil
				}
				return fn(a)
			})
			reg.Add(tool)
		}
		plain := func(fn func(map[string]any) fleet.Result) func(map[string]any) (fleet.Result, error) {
			return func(a map[string]any) (fleet.Result, error) { return fn(a), nil }
		}
		notConfigured := func(what string) func(map[string]any) (fleet.Result, error) {
			return plain(func(map[string]any) fleet.Result { return fleet.Fail("%s is not configured", what) })
		}
		add("qa_fetch", fleet.Observe, plain(fetchTool(tg.FetchAllow, fetchClient)))
		add("qa_call", fleet.Exercise, plain(callTool(tg.Call, callClient)))
		add("qa_submit", fleet.Exercise, submitTool(tg.FetchAllow, fetchClient, maxWrites, count))
		add("qa_compile", fleet.Observe, notConfigured("target.compiler"))
		add("qa_chain", fleet.Observe, notConfigured("chain"))
		add("qa_create", fleet.Exercise, notConfigured("qa_create needs target.registry and chain.sponsor_key_file: chain"))
		add("qa_publish", fleet.Exercise, notConfigured("chain"))
		add("qa_report", fleet.Observe, plain(func(a map[string]any) fleet.Result {
			*findings = append(*findings, a)
			return fleet.OK(map[string]any{"status": "posted"})
		}))
		return reg
	}
}

// submitTool is qa_submit over real HTTP with the real tool's result
// fields and budget: a write past maxWrites ends the run (an error), as
// the run's meter does. As the real tool, it names what a POST created
// (qatools.CreatedURL) and sends a DELETE only to what its POSTs created.
func submitTool(allow []string, client *http.Client, maxWrites int, count *writeCount) func(a map[string]any) (fleet.Result, error) {
	used := 0
	created := map[string]bool{}
	return func(a map[string]any) (fleet.Result, error) {
		u, _ := a["url"].(string)
		if !replay.AllowedURL(allow, u) {
			return fleet.Fail("qa_submit: not on the fetch allowlist: %s", u), nil
		}
		method, _ := a["method"].(string)
		if method == "" {
			method = http.MethodPost
		}
		if !slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE"}, method) {
			return fleet.Fail("qa_submit: method %q", method), nil
		}
		if method == "DELETE" && !created[u] && !count.fromPage(u) {
			return fleet.Fail("qa_submit: DELETE only of what this run's qa_submit POSTs created: %s is not one", u), nil
		}
		fields := map[string]string{}
		if f, ok := a["fields"].(map[string]any); ok {
			for k, v := range f {
				fields[k] = fmt.Sprint(v)
			}
		}
		var body []byte
		var ct string
		switch enc, _ := a["enctype"].(string); {
		case method == "DELETE":
		case enc == "" || enc == "form":
			v := url.Values{}
			for k, s := range fields {
				v.Set(k, s)
			}
			body, ct = []byte(v.Encode()), "application/x-www-form-urlencoded"
		case enc == "multipart":
			var b bytes.Buffer
			w := multipart.NewWriter(&b)
			for k, s := range fields {
				w.WriteField(k, s)
			}
			w.Close()
			body, ct = b.Bytes(), w.FormDataContentType()
		case enc == "json":
			j, _ := a["json"].(string)
			if !json.Valid([]byte(j)) {
				return fleet.Fail("qa_submit: json is not a valid JSON value"), nil
			}
			body, ct = []byte(j), "application/json"
		default:
			return fleet.Fail("qa_submit: enctype %q", enc), nil
		}
		if used >= maxWrites {
			return nil, errors.New("write budget exhausted")
		}
		used++
		if count != nil {
			count.writes++
			count.urls = append(count.urls, method+" "+u)
		}
		req, err := http.NewRequest(method, u, bytes.NewReader(body))
		if err != nil {
			return fleet.Fail("qa_submit: bad url %q: %v", u, err), nil
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fleet.Fail("qa_submit %s: %v", u, err), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		hd := map[string]any{}
		for _, k := range []string{"Content-Type", "Content-Security-Policy", "Location", "Allow"} {
			if v := resp.Header.Get(k); v != "" {
				hd[strings.ToLower(k)] = v
			}
		}
		res := fleet.OK(map[string]any{"method": method, "status": resp.StatusCode, "content_type": resp.Header.Get("Content-Type"), "body": string(b),
			"headers": hd, "bytes": len(b), "final_url": resp.Request.URL.String(), "writes_left": maxWrites - used})
		if method == "POST" {
			if c := qatools.CreatedURL(u, res); c != "" {
				created[c] = true
				res["created"] = c
			}
		}
		return res, nil
	}
}
