package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/qafleet/fleetd/crawl"
)

// canaryPage holds the harmless canaries fleetd writes, as a platform
// that stores them unescaped would serve them: one in the markup, one a
// script puts into the document with innerHTML, one in a script element,
// and, when hostile, a page script that replaces alert and tries to
// redefine the hook.
func canaryPage(hostile bool) string {
	hostility := ""
	if hostile {
		hostility = `window.alert = () => {}; try { self.` + crawl.CanaryHook + ` = () => {}; } catch (e) {}`
	}
	stored := `<details open ontoggle=` + crawl.CanaryCall("qa0000000001-bio") + `>`
	return `<!doctype html><html><body>
<div id=served>` + stored + `</div><div id=dom></div>
<script>` + hostility + `
document.getElementById('dom').innerHTML = "<details open ontoggle=` + crawl.CanaryCall("qa0000000002-note") + `>";</script>
<script>` + crawl.CanaryCall("qa0000000003-script") + `; document.body.dataset.done = 'yes';</script>
</body></html>`
}

// TestCanaryHook: fleetd's renderer records every canary that runs (in
// served markup, in markup a script inserts, in a script), though the page
// replaces alert and tries to overwrite the hook.
func TestCanaryHook(t *testing.T) {
	s := serve(t, htmlPage(canaryPage(true)))
	b := newBrowser(t, Config{Allow: allowOnly(s.URL)})
	r := render(t, b, s.URL+"/")
	for _, want := range []string{"qa0000000001-bio", "qa0000000002-note", "qa0000000003-script"} {
		if !slices.Contains(r.Dialogs, want) {
			t.Errorf("canary %s not recorded: dialogs %q", want, r.Dialogs)
		}
	}
	if len(r.Exceptions) > 0 || len(r.ConsoleErrors) > 0 {
		t.Errorf("the canaries threw in fleetd's renderer: %q %q", r.Exceptions, r.ConsoleErrors)
	}
}

// TestCanaryHarmlessToVisitors opens the same page in a plain headless
// Chromium, as a real visitor's browser (no hook): the canaries run and
// do nothing: no dialog, no exception, no request beyond the page, and
// the page's own script after them still runs.
func TestCanaryHarmlessToVisitors(t *testing.T) {
	exec := mustFind(t)
	var requests atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", htmlPage(canaryPage(false)))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/favicon.ico" { // the browser's own
			requests.Add(1)
		}
		http.NotFound(w, r)
	})
	s := serve(t, mux)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exec), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	var dialogs, exceptions []string
	var mu sync.Mutex
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			dialogs = append(dialogs, e.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		case *runtime.EventExceptionThrown:
			exceptions = append(exceptions, e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, runtime.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: s.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	// Wait until the page's last script ran and both details elements
	// toggled (their handlers ran): a frame and a task after the load.
	state := ""
	for deadline := time.Now().Add(10 * time.Second); state != "yes 2"; {
		if time.Now().After(deadline) {
			t.Fatalf("the page did not run through: %q", state)
		}
		res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
			Expression:   `new Promise(r => requestAnimationFrame(() => setTimeout(() => r((document.body && document.body.dataset.done) + ' ' + document.querySelectorAll('details[open]').length), 20)))`,
			AwaitPromise: ptr(true), ReturnByValue: ptr(true)})
		if err == nil && res.Result != nil {
			json.Unmarshal(res.Result.Value, &state)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialogs) > 0 || len(exceptions) > 0 || requests.Load() > 0 {
		t.Errorf("the canaries did something in a visitor's browser: dialogs %q, exceptions %q, extra requests %d", dialogs, exceptions, requests.Load())
	}
}
