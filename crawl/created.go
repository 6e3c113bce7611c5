package crawl

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// createdKeys are the JSON fields that name a created object's URL, most
// common first.
var createdKeys = []string{"url", "href", "self", "location", "link", "uri"}

// CreatedURL returns the URL of the resource a write to writeURL created,
// as its answer names it (RFC 9110 §15.3.2: a Location header; or the new
// object's url, href, self or id in a JSON body), "" when it names none or
// status is not 2xx. finalURL, when set, is where the write ended after
// redirects: relative names resolve against it. Only a URL on the write's
// own origin counts, and never the collection itself. It is what
// qa_submit's "created" and the browser's Rendered.Created both read; it
// never panics on any answer (fuzzed through qatools.CreatedURL).
func CreatedURL(writeURL, finalURL string, status int, location, body string) string {
	base, err := url.Parse(writeURL)
	if err != nil || base.Host == "" {
		return ""
	}
	if finalURL != "" {
		if u, err := url.Parse(finalURL); err == nil && u.Host != "" {
			base = u
		}
	}
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
	if u := sameOrigin(location); u != "" {
		return u
	}
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
