package browser

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chromedp/cdproto/runtime"
	"github.com/qafleet/fleetd/crawl"
)

// FuzzPageText: whatever a page logs, throws or reports through the
// binding, the recorder keeps valid UTF-8 within its caps and never
// panics.
func FuzzPageText(f *testing.F) {
	for _, s := range []string{"TypeError: x is undefined", "héllo wörld " + strings.Repeat("é", 200), `{"kind":"csp","directive":"script-src","blocked":"inline"}`, `{"kind":"dom"}`, "\xff\xfe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := &recorder{out: &crawl.Rendered{}, allow: func(string) error { return nil }, consoles: map[string]bool{}}
		v, _ := json.Marshal(s)
		r.on(&runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{Text: s, URL: s, Exception: &runtime.RemoteObject{Description: s}}})
		r.on(&runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeError, Args: []*runtime.RemoteObject{{Value: v}, {Description: s}}})
		r.on(&runtime.EventBindingCalled{Name: binding, Payload: s})
		for _, list := range [][]string{r.out.Exceptions, r.out.ConsoleErrors, r.out.CSP} {
			for _, m := range list {
				if utf8.ValidString(s) && !utf8.ValidString(m) {
					t.Fatalf("invalid UTF-8 kept from valid input: %q", m)
				}
				if len(m) > 600+len("…") {
					t.Fatalf("kept %d bytes", len(m))
				}
			}
		}
		if c := clip(s, 7); len(c) > 7+len("…") || utf8.ValidString(s) && !utf8.ValidString(c) {
			t.Fatalf("clip(%q) = %q", s, c)
		}
	})
}
