package replay

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// TestWaitPausesOnlyTheLiveCall: Wait delays the replay that first asks
// for the call, not the replays that find it in the history, and a
// cancelled context ends the wait with its error.
func TestWaitPausesOnlyTheLiveCall(t *testing.T) {
	program := func(p *Play) {
		p.Fetch("http://a.test/")
		p.Wait(time.Minute)
		p.Fetch("http://a.test/")
	}
	synctest.Test(t, func(t *testing.T) {
		s := &fleet.State{RunID: "r-wait"}
		cfg := Config{Name: "wait", Cap: 20, Context: context.Background()}
		next := func() (fleet.Step, time.Duration) {
			start := time.Now()
			step, err := Replay(s, cfg, program)
			if err != nil {
				t.Fatal(err)
			}
			return step, time.Since(start)
		}
		answer := func(step fleet.Step) {
			s.History = append(s.History, fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true, "status": 200}})
		}
		step, took := next()
		if step.Call == nil || took != 0 {
			t.Fatalf("first call: %+v after %s, want it at once", step, took)
		}
		answer(step)
		step, took = next()
		if step.Call == nil || took != time.Minute {
			t.Fatalf("second call: %+v after %s, want it after the minute", step, took)
		}
		answer(step)
		if step, took = next(); !step.Done || took != 0 {
			t.Fatalf("replay of a history holding the waited call: %+v after %s, want done at once", step, took)
		}

		s.History = s.History[:1]
		ctx, cancel := context.WithCancel(context.Background())
		cfg.Context = ctx
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		if _, err := Replay(s, cfg, program); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled wait: %v, want context.Canceled", err)
		}
	})
}

// TestStopEndsTheReplayWithTheProgramsError: Stop's error is Replay's, and
// it is not read as malformed output (the loop would retry it).
func TestStopEndsTheReplayWithTheProgramsError(t *testing.T) {
	errMine := errors.New("own network down")
	_, err := Replay(&fleet.State{RunID: "r-stop"}, Config{Name: "stop", Cap: 5}, func(p *Play) {
		p.Stop(errMine)
		t.Error("Stop returned")
	})
	if !errors.Is(err, errMine) || errors.Is(err, fleet.ErrMalformed) {
		t.Fatalf("Replay: %v, want the program's error", err)
	}
}
