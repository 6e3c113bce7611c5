package browser

import (
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/qafleet/fleetd/crawl"
)

// A page's dedicated workers make requests whose end the tab does not see.
// Chromium reports a worker's script request to the tab (requestWillBeSent,
// its id the worker's target id) but its end, and every request of the
// worker itself, only to the worker's own DevTools session, which chromedp
// auto-attaches with nothing enabled and whose messages it drops. So a page
// that started a Worker never settled: it ran to its page budget.
//
// The tab's Fetch domain pauses those requests all the same (a worker's
// fetch, its imports, a nested worker's requests; their Network id empty):
// that is where they are followed. A request the pause carries no Network
// id for (a worker's), or a worker's script, is in flight from its pause until the Fetch domain
// pauses it again at its response (Fetch.continueRequest with
// interceptResponse: its status, or the error it failed with), or until it
// is failed by the fences, its worker goes (its target destroyed) or a top
// navigation. A worker's script also ends when the worker is attached (it
// runs, so its script has loaded: a blob: worker's script is never paused).
//
// Following them on sessions of their own was tried and refused: a session
// of ours with Network on a running worker takes its requests off the tab's
// Fetch domain (and a worker has no Fetch domain), so the fences would have
// lost them; and pausing workers at their start (waitForDebuggerOnStart)
// also pauses the page's service workers, for good.
//
// What this does not follow: a worker's WebSocket (the Fetch domain does
// not pause handshakes: the proxy fences them), a response body after its
// headers (a worker's streamed response counts as ended at them) and a
// nested worker's script (its parent worker's: the tab sees nothing of it,
// the proxy fences it). A worker's computing is no activity: a page quiet
// for Config.Quiet while its worker computes is settled.
//
// Shared and service workers are not the page's: they outlive it, and their
// requests are not paused by the tab; the proxy alone fences them. The tab
// sees their script requests start too (their ids their target ids, the
// target announced first) and never end: the page does not wait for them
// (recorder.targetSeen).

// onTarget hears the tab's Target events: which targets are workers, and
// when one starts or goes.
func (r *recorder) onTarget(ev any) {
	var info *target.Info
	switch e := ev.(type) {
	case *target.EventTargetCreated:
		info = e.TargetInfo
	case *target.EventTargetInfoChanged:
		info = e.TargetInfo
	case *target.EventAttachedToTarget:
		r.workerStarted(e.TargetInfo)
		return
	case *target.EventTargetDestroyed:
		r.workerGone(e.TargetID)
		return
	}
	r.targetSeen(info)
}

// targetSeen notes what a target announced to the tab means for the page's
// requests: a dedicated worker's id names its script request; a shared or
// service worker's names a script request that is not the page's.
func (r *recorder) targetSeen(info *target.Info) {
	if info == nil {
		return
	}
	id := network.RequestID(info.TargetID)
	switch info.Type {
	case "worker":
		if info.ParentID != r.tab && !r.workers[network.RequestID(info.ParentID)] {
			return // another tab's (one closing in the background), or a cross-site frame's
		}
		if len(r.workers) < maxRequests {
			r.workers[id] = true
		}
		if f, ok := r.inflight[id]; ok {
			f.fetch = true // announced before its target: now known a worker's script
			r.inflight[id] = f
		}
	case "shared_worker", "service_worker":
		if len(r.apart) < maxRequests {
			r.apart[id] = true
		}
		delete(r.inflight, id)
	}
}

// workerStarted ends a dedicated worker's script request: the worker runs.
func (r *recorder) workerStarted(info *target.Info) {
	if info == nil || info.Type != "worker" {
		return
	}
	if _, ok := r.inflight[network.RequestID(info.TargetID)]; ok {
		r.end(network.RequestID(info.TargetID))
	}
}

// workerGone ends a dedicated worker's script request and, as the tab
// cannot tell which worker sent which, every request followed by the Fetch
// domain: a terminated worker's requests get no response.
func (r *recorder) workerGone(id target.ID) {
	if !r.workers[network.RequestID(id)] {
		return
	}
	for rid, f := range r.inflight {
		if f.fetch || rid == network.RequestID(id) {
			r.active()
			delete(r.inflight, rid)
		}
	}
}

// followPaused is called with each request the tab's Fetch domain pauses
// at its request stage. It reports whether the request is one the tab's
// Network domain will not end (a worker's, or a worker's script): then it
// is in flight (and listed among the page's requests) until its response
// is paused too (followAnswered), and the caller asks for that. A request
// is known a worker's by what the pause carries, not by the Network domain
// having missed it: the tab's listener has handled every message before
// the pause (Listen runs in message order) but the browser's own requests
// may be announced after theirs, or never.
func (r *recorder) followPaused(ev fetch.EventRequestPaused) bool {
	id := followID(ev)
	if ev.Request == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.workers[id]: // a worker's script: its id is the worker's target id
	case ev.NetworkID == "" && len(r.workers) > 0:
		// A worker's own request: no Network domain numbered it.
	default:
		// The tab's, which its Network domain ends, or the browser's own
		// (its favicon fetch: numbered, paused, and sometimes announced
		// after its pause or never), which is not the page's at all.
		return false
	}
	_, listed := r.byID[id]
	r.active()
	r.inflight[id] = flight{fetch: true}
	if !listed && len(r.out.Requests) < maxRequests {
		r.byID[id] = len(r.out.Requests)
		r.out.Requests = append(r.out.Requests, crawl.Request{URL: ev.Request.URL, Method: ev.Request.Method, Type: strings.ToLower(string(ev.ResourceType))})
	}
	return true
}

// followAnswered ends a followed request whose response (or error) the
// Fetch domain paused, recording its status; failed, when the fences
// failed it at its request stage, ends it with that.
func (r *recorder) followAnswered(ev fetch.EventRequestPaused, failed string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := followID(ev)
	if f, ok := r.inflight[id]; ok && f.fetch {
		r.end(id)
	}
	// Only a followed request is paused at its response: its status is
	// recorded even when it ended first (a worker's script, at the
	// worker's attach).
	i, ok := r.byID[id]
	if !ok {
		return
	}
	rq := &r.out.Requests[i]
	switch {
	case failed != "":
		rq.Failed, rq.Blocked = failed, true
	case ev.ResponseErrorReason != "":
		rq.Failed = string(ev.ResponseErrorReason)
	default:
		rq.Status = int(ev.ResponseStatusCode)
	}
}

// atResponse reports whether ev pauses a response (or a response's error)
// rather than a request.
func atResponse(ev fetch.EventRequestPaused) bool {
	return ev.ResponseStatusCode != 0 || ev.ResponseErrorReason != ""
}

// followID is the id a followed request is known by: its Network id, or,
// when no Network domain numbered it (a worker's request: the worker's own
// session has Network off), the Fetch domain's id of it, which its
// response's pause keeps.
func followID(ev fetch.EventRequestPaused) network.RequestID {
	if ev.NetworkID != "" {
		return ev.NetworkID
	}
	return network.RequestID("fetch:" + string(ev.RequestID))
}
