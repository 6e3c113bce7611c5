package qatools

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// What qa_submit's POST created, and its DELETE. A POST that creates a
// resource commonly names it: a Location header (RFC 9110 §15.3.2, 201
// Created), or the new object's own URL or id in a JSON answer. qa_submit
// reports that URL as "created" and keeps it for the run; a DELETE is sent
// only to a URL the run's own POSTs created, so a probe can remove what it
// left and nothing else (a platform's other resources are not its to
// delete).

// createdKeys are the JSON fields that name a created object's URL, most
// common first.
var createdKeys = []string{"url", "href", "self", "location", "link", "uri"}

// CreatedURL returns the URL of the resource a POST to postURL created, as
// its answer res names it, "" when it names none. Only a URL on the POST's
// own origin counts. It never panics on any answer (fuzzed).
func CreatedURL(postURL string, res fleet.Result) string {
	base, err := url.Parse(postURL)
	if err != nil || base.Host == "" {
		return ""
	}
	if fu, ok := res["final_url"].(string); ok && fu != "" {
		if u, err := url.Parse(fu); err == nil && u.Host != "" {
			base = u
		}
	}
	status, _ := res["status"].(int)
	if status < 200 || status > 299 {
		return ""
	}
	sameOrigin := func(ref string) string {
		ref = strings.TrimSpace(ref)
		if ref == "" || len(ref) > 2048 {
			return ""
		}
		u, err := base.Parse(ref)
		if err != nil || u.Scheme != base.Scheme || u.Host != base.Host || (u.Scheme != "http" && u.Scheme != "https") {
			return ""
		}
		u.Fragment, u.RawFragment = "", ""
		if u.Path == base.Path && u.RawQuery == base.RawQuery {
			return "" // the collection itself, not what was created
		}
		return u.String()
	}
	if h, ok := res["headers"].(map[string]any); ok {
		if loc, ok := h["location"].(string); ok {
			if u := sameOrigin(loc); u != "" {
				return u
			}
		}
	}
	body, _ := res["body"].(string)
	var obj map[string]any
	if json.Unmarshal([]byte(body), &obj) != nil {
		return ""
	}
	for _, k := range createdKeys {
		if s, ok := obj[k].(string); ok {
			if u := sameOrigin(s); u != "" {
				return u
			}
		}
	}
	var id string
	switch v := obj["id"].(type) {
	case string:
		id = v
	case float64:
		if v == float64(int64(v)) {
			id = strconv.FormatInt(int64(v), 10)
		}
	}
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "/?#\\ \t\r\n") || id == "." || id == ".." {
		return ""
	}
	return sameOrigin(strings.TrimSuffix(base.Path, "/") + "/" + url.PathEscape(id))
}

// remember keeps what a POST created, for the run's DELETE, and reserves
// the write that DELETE will spend (sandbox.Meter.Reserve): pages' own
// writes cannot take it.
func (t *tools) remember(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created == nil {
		t.created = map[string]bool{}
	}
	if !t.created[u] { // new, or created again after its DELETE
		t.run.Meter.Reserve(fleet.ResWrites, 1)
	}
	t.created[u] = true
}

// undone marks u's DELETE as done (removed, or gone already): its reserved
// write is released. A second DELETE of u is still let through.
func (t *tools) undone(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created[u] {
		t.created[u] = false
		t.run.Meter.Release(fleet.ResWrites, 1)
	}
}

// createdHere reports whether a POST of this run created u.
func (t *tools) createdHere(u string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.created[u]
	return ok
}

// errNotCreated refuses a DELETE of what the run did not create.
func errNotCreated(u string) error {
	return fmt.Errorf("DELETE only of what this run's qa_submit POSTs created (their result's created URL): %s is not one", u)
}
