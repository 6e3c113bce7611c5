package specialists

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixtures/spa"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
)

// TestDeadLinkBuiltByScript: Lantern's guide builds a link to the lamp
// fair from the year its API names; no response holds the link. On the
// flawed platform the fair's page is gone: ux with the rendering crawl
// reports the dead link, naming the guide as the page whose script built
// it; without the rendering crawl it cannot; on the correct twin the link
// resolves and nothing is said about it.
func TestDeadLinkBuiltByScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ux with a browser against two platforms")
	}
	exec := mustChromium(t)
	run := func(mode twin.Mode, render bool) []map[string]any {
		app, err := spa.Serve(context.Background(), mode)
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		tg := app.Target()
		client := &http.Client{Timeout: 10 * time.Second}
		opts := Options{}
		if render {
			b, err := evalBrowser(exec, tg, fleet.Observe, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			opts.Renderer = b
		}
		_, got := runLoop(t, "ux", fleet.Observe, tg, httpTools(tg, client, client), opts)
		var fair []map[string]any
		for _, f := range got {
			if strings.Contains(fmt.Sprint(f["summary"]), "/fair/") {
				fair = append(fair, f)
			}
		}
		return fair
	}
	flawed := run(twin.Flawed, true)
	if len(flawed) != 1 {
		t.Fatalf("flawed, rendering: %d findings about the fair's link, want 1:%s", len(flawed), summaries(flawed))
	}
	s := fmt.Sprint(flawed[0]["summary"])
	for _, w := range []string{"Dead link on http://", "/guide, built by the page's script", "/fair/2027 answers HTTP 404"} {
		if !strings.Contains(s, w) {
			t.Errorf("the finding does not say %q: %s", w, s)
		}
	}
	if got := run(twin.Flawed, false); len(got) != 0 {
		t.Errorf("the text crawl alone found a link only the script builds:%s", summaries(got))
	}
	if got := run(twin.Correct, true); len(got) != 0 {
		t.Errorf("correct twin: findings about the fair's link:%s", summaries(got))
	}
}
