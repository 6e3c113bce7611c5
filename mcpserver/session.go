package mcpserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/fleet"
)

// session is one MCP session and its (at most one) run.
type session struct {
	srv    *Server
	ss     *mcp.ServerSession
	client Client
	calls  chan *pending // tools/calls waiting for the run to take them
	gone   chan struct{} // closed when the MCP session has ended

	mu      sync.Mutex
	goneWhy string
	run     *attempt // the current or last run attempt; nil before the first call
}

// attempt is one try at running the session's run. done is closed when
// RunFunc has returned; res and err are set before.
type attempt struct {
	done chan struct{}
	res  fleet.RunResult
	err  error

	mu    sync.Mutex
	runID string // set once the run's first Next tells it; handlers read it
}

// pending is one tools/call handed to the run. reply receives its recorded
// turn (buffered: the run never waits for a handler).
type pending struct {
	call  fleet.Call
	reply chan fleet.TurnEvent
}

// end marks the session gone; its run's next Next returns done.
func (s *session) end(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.gone:
	default:
		s.goneWhy = why
		close(s.gone)
	}
}

// call hands one tools/call to the session's run, starting the run on the
// first call, and returns the recorded result.
func (s *session) call(ctx context.Context, c fleet.Call) (*mcp.CallToolResult, error) {
	a, errRes := s.attempt()
	if errRes != nil {
		return errRes, nil
	}
	p := &pending{call: c, reply: make(chan fleet.TurnEvent, 1)}
	select {
	case s.calls <- p:
	case <-a.done:
		return s.endedResult(a), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.srv.callTaken != nil {
		s.srv.callTaken(a.done)
	}
	select {
	case ev := <-p.reply:
		return toolResult(a.id(), ev.Verdict, ev.Result), nil
	case <-a.done:
		// The run records the call's turn (and narrate sends its reply)
		// before it ends, so both cases can be ready here, and select picks
		// at random: a reply sent wins, or a call that ran and was recorded
		// would be answered as refused by the ended run.
		select {
		case ev := <-p.reply:
			return toolResult(a.id(), ev.Verdict, ev.Result), nil
		default:
		}
		// The run ended with the call taken but no turn recorded for it (a
		// harness failure); the record's footer says what happened.
		return s.endedResult(a), nil
	case <-ctx.Done():
		// The client gave up on this request; the call still runs and is
		// recorded, its answer dropped.
		return nil, ctx.Err()
	}
}

// attempt returns the running attempt, starting one when the session has
// none. errRes is the tool error to answer with when there is no run to
// take the call: the session's run is over, or none could start.
func (s *session) attempt() (a *attempt, errRes *mcp.CallToolResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.run; a != nil {
		select {
		case <-a.done:
			if a.res.RunID != "" {
				return nil, s.endedResult(a)
			}
			// The last attempt never started a run: try again.
		default:
			return a, nil
		}
	}
	if err := s.srv.reserveRun(); err != nil {
		return nil, toolError("", "no run started: %v", err)
	}
	a = &attempt{done: make(chan struct{})}
	s.run = a
	m := &model{sess: s, a: a}
	sess := &Session{Client: s.client, Model: m, Narrate: m.narrate}
	go func() {
		defer s.srv.releaseRun()
		defer close(a.done)
		res, err := s.srv.cfg.Run(s.srv.ctx, sess)
		a.res, a.err = res, err
		if res.RunID != "" {
			a.setID(res.RunID)
		}
		s.srv.log.Info("mcp session run ended", "client", s.client.Name, "run_id", res.RunID, "outcome", res.Outcome, "err", err)
		s.log(context.Background(), "info", runEndLine(res, err))
	}()
	return a, nil
}

// endedResult says why no run takes calls any more.
func (s *session) endedResult(a *attempt) *mcp.CallToolResult {
	if a.res.RunID == "" {
		msg := "no run started"
		if a.err != nil {
			msg += ": " + a.err.Error()
		}
		return toolError("", "%s", msg)
	}
	return toolError(a.res.RunID, "this session's run %s has ended (%s: %s); open a new MCP session to start another run", a.res.RunID, a.res.Outcome, a.res.Summary)
}

func runEndLine(res fleet.RunResult, err error) string {
	if res.RunID == "" {
		return fmt.Sprintf("no run started: %v", err)
	}
	return fmt.Sprintf("run %s ended %s: %s (%d turns, %d findings)", res.RunID, res.Outcome, res.Summary, res.Totals.Turns, res.Totals.Findings)
}

// log sends a narration line to the client as an MCP log message, at the
// level the client asked for (none until it asks). A slow client is given
// a moment, never the run.
func (s *session) log(ctx context.Context, level mcp.LoggingLevel, line string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "fleetd", Data: line})
}

func (a *attempt) setID(id string) {
	a.mu.Lock()
	a.runID = id
	a.mu.Unlock()
}

func (a *attempt) id() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runID
}

// model is the session as a fleet.Model: Next returns the client's next
// tools/call. It is used by the run's goroutine only.
type model struct {
	sess *session
	a    *attempt
	// current is the call the last Next took, until its turn is narrated.
	// A turn the loop could not record ends the run; the handler then
	// answers from the run's end.
	current *pending
}

var _ fleet.Model = (*model)(nil)

// Next blocks until the client's next tools/call (the step), the session's
// end (done), or ctx's end (the error). It never makes up a call.
func (m *model) Next(ctx context.Context, st *fleet.State) (fleet.Step, error) {
	if m.a.id() == "" {
		m.a.setID(st.RunID)
		m.sess.log(ctx, "info", fmt.Sprintf("run %s started for %s %s at dial %s", st.RunID, m.sess.client.Name, m.sess.client.Version, st.Dial))
	}
	select {
	case <-ctx.Done():
		return fleet.Step{}, ctx.Err()
	case <-m.sess.gone:
		if err := ctx.Err(); err != nil {
			return fleet.Step{}, err
		}
		m.sess.mu.Lock()
		why := m.sess.goneWhy
		m.sess.mu.Unlock()
		return fleet.Step{Done: true, Summary: fmt.Sprintf("MCP session of %s %s ended: %s", m.sess.client.Name, m.sess.client.Version, why)}, nil
	case p := <-m.sess.calls:
		m.current = p
		return fleet.Step{Call: &p.call}, nil
	}
}

// narrate is the run's Narrate hook: a recorded turn answers the call it
// ran, and is sent to the client as a log line.
func (m *model) narrate(ev fleet.TurnEvent) {
	if ev.Done || ev.Tool == "" {
		return
	}
	if m.current != nil {
		m.current.reply <- ev
		m.current = nil
	}
	m.sess.log(context.Background(), "info", ev.SummaryLine())
}
