package docclaims

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestClaims reads docs written in several styles; each must yield the
// same kind of claims, with the line that makes each promise.
func TestClaims(t *testing.T) {
	const doc = "https://api.test/docs/guide.md"
	for _, tc := range []struct {
		name, ct, text string
		want           []Claim
	}{
		{
			name: "bullet list", ct: "text/markdown",
			text: "# API\n\n- `GET /v1/items` returns a JSON list of items.\n- `GET /v1/items/{id}` returns the item with fields `id`, `name` and `price`.\n- `DELETE /v1/items/{id}` removes an item; answers 204 No Content.\n",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/v1/items", Line: 3, Quote: "- `GET /v1/items` returns a JSON list of items.", Type: "json", TypeLine: 3},
				{Method: "GET", URL: "https://api.test/v1/items/%7Bid%7D", Line: 4, Quote: "- `GET /v1/items/{id}` returns the item with fields `id`, `name` and `price`.", Fields: []string{"id", "name", "price"}, FieldsLine: 4},
				{Method: "DELETE", URL: "https://api.test/v1/items/%7Bid%7D", Line: 5, Quote: "- `DELETE /v1/items/{id}` removes an item; answers 204 No Content.", Status: 204, StatusLine: 5},
			},
		},
		{
			name: "table", ct: "text/markdown",
			text: "| Method | Path | Returns | Status |\n|---|---|---|---|\n| GET | `/health` | plain text `ok` | 200 |\n| POST | /v1/orders | JSON `{\"order_id\": \"...\", \"total\": 0}` | 201 |\n",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/health", Line: 3, Quote: "| GET | `/health` | plain text `ok` | 200 |", Type: "text", TypeLine: 3, Status: 200, StatusLine: 3},
				{Method: "POST", URL: "https://api.test/v1/orders", Line: 4, Quote: "| POST | /v1/orders | JSON `{\"order_id\": \"...\", \"total\": 0}` | 201 |", Type: "json", TypeLine: 4, Status: 201, StatusLine: 4, Fields: []string{"order_id", "total"}, FieldsLine: 4},
			},
		},
		{
			name: "code blocks with a response example", ct: "text/markdown",
			text: "## Status\n\n```http\nGET /v1/status HTTP/1.1\n```\n\nResponse:\n\n```json\n{\n  \"version\": \"1.2\",\n  \"uptime\": 12,\n  \"nested\": {\"not\": \"top\"}\n}\n```\n\n## Other\n\nNothing here returns JSON.\n",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/v1/status", Line: 4, Quote: "GET /v1/status HTTP/1.1", Type: "json", TypeLine: 10, Fields: []string{"version", "uptime", "nested"}, FieldsLine: 10},
			},
		},
		{
			name: "prose", ct: "text/plain",
			text: "To list the catalogue, send a GET request to https://api.test/v1/catalogue. It responds with JSON containing `products` and `next`.\nThe `/v1/ping` endpoint returns 200 OK and the text pong.\nPOST requests to /v1/login need a body; they return 200 only if the password matches.\n",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/v1/catalogue", Line: 1, Quote: "To list the catalogue, send a GET request to https://api.test/v1/catalogue. It responds with JSON containing `products` and `next`.", Type: "json", TypeLine: 1, Fields: []string{"products", "next"}, FieldsLine: 1},
				{Method: "GET", URL: "https://api.test/v1/ping", Line: 2, Quote: "The `/v1/ping` endpoint returns 200 OK and the text pong.", Status: 200, StatusLine: 2},
				{Method: "POST", URL: "https://api.test/v1/login", Line: 3, Quote: "POST requests to /v1/login need a body; they return 200 only if the password matches."},
			},
		},
		{
			name: "curl examples", ct: "text/markdown",
			text: "Create a session:\n\n```sh\ncurl -s -X POST https://api.test/v1/sessions \\\n  -H 'Content-Type: application/json' \\\n  -d '{\"user\": \"ann\", \"password\": \"x\"}'\n```\n\nList them:\n\n```\n$ curl https://api.test/v1/sessions?limit=2\n[{\"id\": 1, \"user\": \"ann\"}]\n```\n\n```\ncurl --data 'a=b' /v1/forms\n```\n",
			want: []Claim{
				{Method: "POST", URL: "https://api.test/v1/sessions", Line: 4, Quote: "curl -s -X POST https://api.test/v1/sessions \\"},
				{Method: "GET", URL: "https://api.test/v1/sessions?limit=2", Line: 12, Quote: "$ curl https://api.test/v1/sessions?limit=2", Type: "json", TypeLine: 13, Fields: []string{"id", "user"}, FieldsLine: 13},
				{Method: "POST", URL: "https://api.test/v1/forms", Line: 17, Quote: "curl --data 'a=b' /v1/forms"},
			},
		},
		{
			name: "html docs page", ct: "text/html",
			text: "<html><body><h2>Search</h2><p>Use <code>GET /v1/search?q=TERM</code>; the response is an HTML page. The <code>/v1/ping</code> endpoint returns JSON with a <code>pong</code> field.</p><table><tr><th>Verb</th><th>Endpoint</th><th>Content type</th></tr><tr><td>GET</td><td>/v1/feed.xml</td><td>application/xml</td></tr></table></body></html>",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/v1/search?q=TERM", Line: 2, Quote: "Use `GET /v1/search?q=TERM`; the response is an HTML page. The `/v1/ping` endpoint returns JSON with a `pong` field.", Type: "html", TypeLine: 2},
				{Method: "GET", URL: "https://api.test/v1/ping", Line: 2, Quote: "Use `GET /v1/search?q=TERM`; the response is an HTML page. The `/v1/ping` endpoint returns JSON with a `pong` field.", Type: "json", TypeLine: 2, Fields: []string{"pong"}, FieldsLine: 2},
				{Method: "GET", URL: "https://api.test/v1/feed.xml", Line: 4, Quote: "| GET | /v1/feed.xml | application/xml |", Type: "xml", TypeLine: 4},
			},
		},
		{
			name: "endpoints as headings, errors and bodies", ct: "text/markdown",
			text: "## Models\n\n### `GET /v2/models`\n\nResponse model: a map (with `models` and `count`).\n\nErrors:\n- Unhandled exceptions return `HTTP 500`.\n\n### `POST /v2/models`\n\nBody: `{\"name\": \"x\"}`\n",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/v2/models", Line: 3, Quote: "### `GET /v2/models`", Fields: []string{"models", "count"}, FieldsLine: 5},
				{Method: "POST", URL: "https://api.test/v2/models", Line: 10, Quote: "### `POST /v2/models`"},
			},
		},
		{
			name: "a request body is no promise about the answer", ct: "text/markdown",
			text: "Send `POST /v1/echo` with the JSON body {\"text\": \"hi\"}.\n",
			want: []Claim{
				{Method: "POST", URL: "https://api.test/v1/echo", Line: 1, Quote: "Send `POST /v1/echo` with the JSON body {\"text\": \"hi\"}."},
			},
		},
		{
			name: "two mentions on a line share nothing", ct: "text/markdown",
			text: "Use GET /a for reads and POST /b for writes, which returns JSON.\n",
			want: []Claim{
				{Method: "GET", URL: "https://api.test/a", Line: 1, Quote: "Use GET /a for reads and POST /b for writes, which returns JSON."},
				{Method: "POST", URL: "https://api.test/b", Line: 1, Quote: "Use GET /a for reads and POST /b for writes, which returns JSON.", Type: "json", TypeLine: 1},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Claims(doc, tc.ct, tc.text)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Claim{}, "TypeQuote", "StatusQuote", "FieldsQuote")); diff != "" {
				t.Errorf("Claims (-want +got):\n%s", diff)
			}
			for _, c := range got {
				if c.TypeLine > 0 && c.TypeQuote == "" || c.StatusLine > 0 && c.StatusQuote == "" || c.FieldsLine > 0 && c.FieldsQuote == "" {
					t.Errorf("a promise without its quote: %+v", c)
				}
			}
		})
	}
}

func TestTopKeys(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"reply": "..."}`, []string{"reply"}},
		{`{"items": [...], "total": 3, "meta": {"page": 1}}`, []string{"items", "total", "meta"}},
		{`[{"id": 1, "tags": ["a"]}, {"other": 2}]`, []string{"id", "tags"}},
		{`{"a": "has \" quote", "b": 1}`, []string{"a", "b"}},
		{`not json`, nil},
		{`{"unterminated`, nil},
	} {
		if diff := cmp.Diff(tc.want, TopKeys(tc.in), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("TopKeys(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
