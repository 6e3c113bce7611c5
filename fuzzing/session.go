package fuzzing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// A session of any engine goes stage → merge → dictionary → rounds →
// keep: runSession is that flow, written once, and sessionEngine the
// steps an engine fills in (builtin: engine.go, aflpp: afl.go, libfuzzer:
// libfuzzer.go). The session holds what the steps share: the caller's
// Session, the report being written, its notes, the clock and the crash
// states found so far.

// sessionEngine is one engine's steps of a session, called in order by
// runSession.
type sessionEngine interface {
	// stage gathers the starting inputs (the seeds, the kept corpus, other
	// engines' inputs) where the engine reads them, and returns a sample
	// of them to harvest a dictionary from.
	stage(ctx context.Context, s *session) (sample [][]byte, err error)
	// merge reduces what was staged to the corpus the session starts
	// from (libFuzzer's -merge=1); the other engines start from it as
	// staged.
	merge(ctx context.Context, s *session) error
	// dictionary puts the session's dictionary where the engine reads it:
	// the tokens of the sample and the engine's own.
	dictionary(ctx context.Context, s *session, sample [][]byte) error
	// round fuzzes once (round counts from 0); more is false when the
	// session is over: its time is up, its crashes are known, or the engine
	// runs one round only.
	round(ctx context.Context, s *session, round int) (more bool, err error)
	// keep saves what the session found for later sessions and the other
	// engines.
	keep(ctx context.Context, s *session) error
}

// session is one session's shared state.
type session struct {
	Session
	rep         *Tally
	notes       []string
	start       time.Time
	deadline    time.Time
	maxCrashers int
	// states are the outcome|state keys of the crashers reported; with
	// oneHang every hang is one key (a hang costs a whole timeout, and
	// without coverage its shape says little).
	states  map[string]bool
	oneHang bool
	// keepCap bounds the crashers the report lists (0 = no bound); a
	// state past it is still known and its input kept.
	keepCap int
}

// newSession starts a session of engine with the caller's bounds (the
// defaults: 20 s, 8 crash states) and its clock running.
func newSession(engine string, s Session) *session {
	if s.Duration <= 0 {
		s.Duration = 20 * time.Second
	}
	if s.MaxCrashers <= 0 {
		s.MaxCrashers = 8
	}
	now := time.Now()
	return &session{Session: s, rep: &Tally{Engine: engine}, start: now, deadline: now.Add(s.Duration),
		maxCrashers: s.MaxCrashers, states: map[string]bool{}}
}

// runSession runs e's steps in order. A step's error ends the session;
// the report so far is returned with it.
func runSession(ctx context.Context, e sessionEngine, s *session) (*Tally, error) {
	sample, err := e.stage(ctx, s)
	if err != nil {
		return s.rep, err
	}
	if err := e.merge(ctx, s); err != nil {
		return s.rep, err
	}
	if err := e.dictionary(ctx, s, sample); err != nil {
		return s.rep, err
	}
	for round := 0; ; round++ {
		more, err := e.round(ctx, s, round)
		if err != nil {
			return s.rep, err
		}
		if !more {
			break
		}
	}
	if err := e.keep(ctx, s); err != nil {
		return s.rep, err
	}
	if len(s.notes) > 0 {
		s.rep.Note = strings.Join(nonEmptyStrings(append([]string{s.rep.Note}, s.notes...)...), "; ")
	}
	return s.rep, nil
}

// note adds a line to the report's note.
func (s *session) note(n string) { s.notes = append(s.notes, n) }

// key is c's crash-state key (every hang one key with oneHang).
func (s *session) key(c Crasher) string {
	if s.oneHang && c.Outcome == TimedOut {
		return TimedOut
	}
	return c.Outcome + "|" + c.State
}

// known reports a crasher whose state the session has reported.
func (s *session) known(c Crasher) bool { return s.states[s.key(c)] }

// crashStates counts the crash states reported, hangs aside.
func (s *session) crashStates() int {
	n := 0
	for k := range s.states {
		if k != TimedOut && !strings.HasPrefix(k, TimedOut+"|") {
			n++
		}
	}
	return n
}

// record reports c, found on input (the engine's raw form), unless its
// state is known: the report's crashers and first crash (a hang counts
// only with StopAtHang), and the crash kept in the persistent corpus. It
// returns whether c was new. c.At and c.Execs are the engine's to set.
func (s *session) record(c Crasher, input []byte) (bool, error) {
	k := s.key(c)
	if s.states[k] {
		return false, nil
	}
	s.states[k] = true
	if s.keepCap == 0 || len(s.rep.Crashers) < s.keepCap {
		s.rep.Crashers = append(s.rep.Crashers, c)
	}
	if (c.Outcome != TimedOut || s.StopAtHang) && (s.rep.FirstCrash == 0 || c.At < s.rep.FirstCrash) {
		s.rep.FirstCrash = max(c.At, time.Millisecond)
	}
	if s.Corpus != nil {
		if err := s.Corpus.AddCrash(input); err != nil {
			return true, err
		}
	}
	return true, nil
}

// writeDict writes tokens (FormatDict's syntax, which libFuzzer and AFL++
// both read) to path and counts its entries in the report; it returns
// path, or "" when no token could be written. what starts an error.
func (s *session) writeDict(tokens []string, path, what string) (string, error) {
	text, _ := FormatDict(tokens)
	if len(text) == 0 {
		return "", nil
	}
	if err := os.WriteFile(path, text, 0o600); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	s.rep.DictEntries = strings.Count(string(text), "\n")
	return path, nil
}
