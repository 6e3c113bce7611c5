package specialists

import (
	"testing"

	"github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/fleet"
)

// TestTestbedRendered: with the rendering crawl on, security and ux find on
// the testbed (server-rendered pages) exactly what they find without it:
// the browser adds no false positive to a platform it cannot see more of.
func TestTestbedRendered(t *testing.T) {
	exe := mustChromium(t)
	tg := startTestbed(t)
	tools := httpOnlyTools(tg)
	opts, err := OptionsFor(tg)
	if err != nil {
		t.Fatal(err)
	}
	newBrowser := func(t *testing.T) *browser.Browser {
		b, err := evalBrowser(exe, tg, fleet.Exercise, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	t.Run("security", func(t *testing.T) {
		o := opts
		o.Renderer = newBrowser(t)
		_, got := runLoop(t, "security", fleet.Exercise, tg, tools, o)
		wantFindings(t, got, map[string][]string{
			"S2 private key on a public path": {"web", "/.env", "hex private key", "DEPLOYER_PRIVATE_KEY"},
			"S4 spoofed from":                 {"call", `"from": "admin"`},
			"S4 spoofed header":               {"call", "X-Caller: admin"},
			"S5 cors":                         {"cors", "reflects the foreign Origin", "Access-Control-Allow-Credentials"},
			"S5 headers":                      {"headers", "Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"},
		})
	})
	t.Run("ux", func(t *testing.T) {
		o := opts
		o.Renderer = newBrowser(t)
		_, got := runLoop(t, "ux", fleet.Exercise, tg, tools, o)
		wantFindings(t, got, map[string][]string{
			"U1 leaked os error": {"face", "does not exist", "no such file or directory"},
			"U2 dead link":       {"docs", "dead link", "/docs/getting-started"},
			"U3 GET promised":    {"docs", "promise GET", "/call", "405"},
			"U4 empty reply":     {"call", `"bob"`, "empty reply"},
			// bob's stored payload (an <img src=x onerror=...>) runs in the
			// browser, and its image fails: true, and seen only there.
			"R1 bob's face loses the stored payload's image": {"render", "/bob/", "loses 1 request", "/bob/x", "HTTP 404"},
		})
	})
}
