package browser

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// A page's dedicated workers make requests the tab does not see end.
// Chromium reports a worker's script request to the tab (requestWillBeSent,
// its id the worker's target id) but its end, and every request of the
// worker itself, only to the worker's own DevTools session; chromedp
// auto-attaches the tab's workers without enabling anything on them and
// drops their sessions' messages. So a page that started a Worker never
// settled: it ran to its page budget.
//
// workers watches a tab's dedicated workers so that their requests count
// as the page's: a second session to the tab auto-attaches each one paused
// before it runs (waitForDebuggerOnStart, for type "worker" only: frames
// are left as they were), attaches a session of ours to it with Network
// enabled, asks the same of the worker's own workers, and only then lets it
// run. Its requests, its script's end included, reach the recorder from
// the first. The write fences are unchanged: a worker's requests are paused
// by the tab's Fetch domain like the tab's own (Browser.decide), and the
// proxy fences everything else.
//
// Shared and service workers are not the page's: they outlive it and are
// fenced by the proxy alone. The tab sees their script requests start too
// (their ids their target ids, the target announced first) and never end:
// the page does not wait for them (recorder.runsApart).
type workers struct {
	rec  *recorder
	tab  context.Context // the tab's chromedp context: the parent of our sessions
	done context.Context // ends with the render

	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	cancels []context.CancelFunc
	seen    map[target.ID]bool
}

// workerBudget bounds attaching to one worker and letting it run: machine
// time, like the tab's set-up.
const workerBudget = 10 * time.Second

// workerFilter auto-attaches dedicated workers only.
var workerFilter = target.Filter{{Type: "worker"}, {Exclude: true}}

// watch opens the second session to the tab and asks it to pause the tab's
// dedicated workers at their start, before the page is navigated.
func (w *workers) watch(ctx context.Context) error {
	c := chromedp.FromContext(w.tab)
	if c == nil || c.Target == nil {
		return fmt.Errorf("no tab to watch")
	}
	sctx, cancel := chromedp.NewContext(w.tab, chromedp.WithTargetID(c.Target.TargetID), chromedp.WithDetachOnCancel(),
		chromedp.WithListener(w.attached))
	w.keep(cancel)
	return w.bounded(ctx, sctx, func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			// Only the worker events are wanted here: the tab's session
			// reports the rest.
			for _, c := range []cdp.Command[cdp.Empty, cdp.Empty]{network.Disable, dom.Disable, css.Disable} {
				if _, err := cdp.Call(ctx, t, c, cdp.Empty{}); err != nil {
					return err
				}
			}
			return nil
		})); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, target.SetAutoAttach, target.SetAutoAttachParams{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: ptr(true), Filter: workerFilter})
		return err
	})
}

// bounded runs f on session ctx sctx (its first call attaches it) within
// workerBudget, ctx and the render.
func (w *workers) bounded(ctx, sctx context.Context, f func(ctx context.Context) error) error {
	// The first command attaches the session, whose listeners live as long
	// as the context of that command: sctx itself, ended by the render.
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(sctx) }()
	timer := time.NewTimer(workerBudget)
	defer timer.Stop()
	select {
	case err := <-errc:
		if err != nil {
			return err
		}
	case <-timer.C:
		return fmt.Errorf("no session within %s", workerBudget)
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done.Done():
		return w.done.Err()
	}
	cctx, cancel := context.WithTimeout(sctx, workerBudget)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	defer context.AfterFunc(w.done, cancel)()
	return f(cctx)
}

// attached hears a session's events (the tab's second session's or a
// worker's): a dedicated worker that waits for us is attached to, apart
// (a listener may not send commands).
func (w *workers) attached(ev any) {
	e, ok := ev.(*target.EventAttachedToTarget)
	if !ok || e.TargetInfo == nil || e.TargetInfo.Type != "worker" || !e.WaitingForDebugger {
		return
	}
	id := e.TargetInfo.TargetID
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.seen[id] {
		return
	}
	if w.seen == nil {
		w.seen = map[target.ID]bool{}
	}
	w.seen[id] = true
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if err := w.run(id); err != nil && w.done.Err() == nil {
			w.rec.workerLost(id, err)
		}
	}()
}

// run attaches a session of ours to the paused worker id, its network
// events going to the recorder, asks it to pause its own workers likewise,
// and lets it run.
func (w *workers) run(id target.ID) error {
	events := w.rec.worker(id)
	wctx, cancel := chromedp.NewContext(w.tab, chromedp.WithTargetID(id), chromedp.WithDetachOnCancel(),
		chromedp.WithListener(func(ev any) { events(ev); w.attached(ev) }))
	w.keep(cancel)
	return w.bounded(w.done, wctx, func(ctx context.Context) error {
		// A worker that cannot have workers of its own refuses: it runs
		// all the same.
		chromedp.Call(ctx, target.SetAutoAttach, target.SetAutoAttachParams{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: ptr(true), Filter: workerFilter})
		_, err := chromedp.Call(ctx, runtime.RunIfWaitingForDebugger, cdp.Empty{})
		return err
	})
}

func (w *workers) keep(cancel context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cancels = append(w.cancels, cancel)
}

// close waits for the attaches under way (w.done has ended) and detaches
// our sessions, workers first: the tab closes after.
func (w *workers) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
	for i := len(w.cancels) - 1; i >= 0; i-- {
		w.cancels[i]()
	}
}

// worker returns the recorder's hearing of worker id's session: its
// network events, the requests of that worker.
func (r *recorder) worker(id target.ID) func(ev any) {
	return func(ev any) {
		switch ev.(type) {
		case *network.EventRequestWillBeSent, *network.EventResponseReceived, *network.EventLoadingFinished, *network.EventLoadingFailed,
			*network.EventWebSocketCreated, *network.EventWebSocketHandshakeResponseReceived, *network.EventWebSocketClosed, *network.EventWebSocketFrameError:
			r.record(id, ev)
		}
	}
}

// workerGone ends the requests of a worker that went (its target
// destroyed), its script's included (the request whose id is the worker's
// target id): a worker terminated or failed to load reports no more.
func (r *recorder) workerGone(id target.ID) {
	for rid, f := range r.inflight {
		if f.worker == id || rid == network.RequestID(id) {
			r.active()
			delete(r.inflight, rid)
		}
	}
}

// workerLost gives up on a worker whose session could not be set up: its
// requests are not waited for, and the render says so.
func (r *recorder) workerLost(id target.ID, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.inflight[network.RequestID(id)]; !ok {
		return // gone already (its page navigated away, or it failed to load)
	}
	r.workerGone(id)
	add(&r.out.Notes, fmt.Sprintf("a dedicated worker's requests were not followed (%v)", err))
}

// runsApart marks the script request of a shared or service worker (its
// id the worker's target id) as not the page's: its end is reported to the
// worker alone, which outlives the page.
func (r *recorder) runsApart(info *target.Info) {
	if info == nil || info.Type != "shared_worker" && info.Type != "service_worker" {
		return
	}
	id := network.RequestID(info.TargetID)
	if len(r.apart) < maxRequests {
		r.apart[id] = true
	}
	delete(r.inflight, id)
}
