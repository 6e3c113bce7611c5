package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeReport feeds report files to the decoder and every decoded
// report to the Health page and the HTML report: no panic, and no byte of a
// title reaches the page as markup.
func FuzzDecodeReport(f *testing.F) {
	good, _ := json.Marshal(testReport(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)))
	f.Add(good)
	f.Add([]byte(`{"schema":1,"clusters":[{"id":"x","title":"<script>alert(1)</script>","severity":"bogus","state":"weird"}]}`))
	f.Add([]byte(`{"schema":1,"clusters":[{"id":""}]}`))
	f.Add([]byte(`{"schema":2}`))
	f.Add([]byte(`{"schema":1,"clusters":[{"id":"a","repro":{"tool":"qa_x","args":{"a":"</code>"}},"pr":{"url":"javascript:alert(1)","number":1}}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := DecodeReport(b)
		if err != nil {
			if rep != nil {
				t.Fatal("a report and an error")
			}
			return
		}
		var buf bytes.Buffer
		if err := RenderReport(&buf, rep, &History{}, 0, time.Unix(0, 0)); err != nil {
			t.Fatalf("render: %v", err)
		}
		if bad, _ := unsafeMarkup(buf.String()); len(bad) > 0 {
			t.Fatalf("the report file holds code: %v", bad)
		}
	})
}

// FuzzControlRequest sends arbitrary bodies and content types to the
// controls: every answer is a clear client error or success, never a 500
// or a panic, and nothing but a valid rung reaches the dial file.
func FuzzControlRequest(f *testing.F) {
	f.Add("/api/dial", "application/json", `{"rung":"exercise","reason":"x"}`)
	f.Add("/api/dial", "application/x-www-form-urlencoded", "rung=propose&reason=%00")
	f.Add("/api/findings/1/mark", "application/json", `{"what":"duplicate-of","of":1e99}`)
	f.Add("/api/pause", "text/plain", "")
	f.Add("/api/findings/1/mark", "application/json", `{"what":"accepted-risk","reason":"x","until":"720h"}`)
	f.Add("/api/findings/0123456789abcdef/mark", "application/x-www-form-urlencoded", "what=unmerge&reason=%ff")
	f.Add("/api/dial", "application/json", `{"rung":null,"reason":{}}`)
	f.Add("/api/specialists/smoke/run", "application/json; charset=utf-8", `{}`)
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, path, ctype, body string) {
		if !strings.HasPrefix(path, "/api/") || strings.ContainsAny(path, " ?#%") {
			return
		}
		if _, err := url.ParseRequestURI(path); err != nil {
			return // not a request a client can send
		}
		r := httptest.NewRequest("POST", "http://127.0.0.1"+path, strings.NewReader(body))
		r.Host = "127.0.0.1"
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		fx.c.ServeHTTP(w, r)
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q %q: %d %s", path, ctype, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			var m map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m["error"] == "" {
				t.Fatalf("error answer is not a JSON error: %s", w.Body)
			}
		}
		if d, err := fx.control.Dial(); err != nil {
			t.Fatalf("the dial file was corrupted: %v (%s)", err, d)
		}
	})
}
