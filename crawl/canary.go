package crawl

// CanaryHook is the name of the function only fleetd's renderer defines
// (package browser adds it to every document before the page's own
// scripts run): calling it with a message records a hit, which the render
// reports in Rendered.Dialogs as that message. Nothing else defines it, so
// a canary that calls it through CanaryCall does nothing in a real
// visitor's browser: no dialog, no request, no exception. A canary fleetd
// writes to a platform (a stored field, a form) calls it instead of alert,
// so what it leaves behind harms no one who opens the page.
const CanaryHook = "fleetdCanary"

// CanaryCall is the JavaScript expression that calls CanaryHook with msg
// when it is defined and is a no-op otherwise: self.fleetdCanary?.('msg').
// msg must hold no quote, backslash, space or markup character (canaries
// are letters, digits and dashes), so the call fits an unquoted attribute
// value and a string literal alike.
func CanaryCall(msg string) string {
	return "self." + CanaryHook + "?.('" + msg + "')"
}
