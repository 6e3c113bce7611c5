package browser

import (
	"context"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/qafleet/fleetd/crawl"
)

// canaryHook defines crawl.CanaryHook in the page's own world (event
// handlers and the page's scripts run there) before any script of the
// page: a call records its message as a dialog, through the alert the
// document started with, so a page that replaces alert cannot hide a hit.
// The property can be neither reassigned nor deleted. Real visitors'
// browsers do not have it: a canary calling it is a no-op there.
const canaryHook = `(() => {
  if (Object.prototype.hasOwnProperty.call(globalThis, '` + crawl.CanaryHook + `')) return;
  const say = globalThis.alert.bind(globalThis);
  Object.defineProperty(globalThis, '` + crawl.CanaryHook + `', {value: (m) => { say(String(m)); }, writable: false, configurable: false, enumerable: false});
})()`

// addCanaryHook adds canaryHook to every new document of the tab (one
// step of the tab's set-up).
func addCanaryHook(ctx context.Context, t *chromedp.Target) error {
	_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: canaryHook})
	return err
}
