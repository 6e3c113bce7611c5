// Package stall runs past a per-input time limit in three ways, for the
// hang confirmation by CPU time: "spin" loops for ever on the CPU (a
// hang), "block" waits for ever on a channel (a hang only wall time
// shows), "sleep" sleeps 2 s and returns (slow, not hung: past the
// replays' first limits, 1 s for libFuzzer and 1.7 s for go test's hang
// dump, well inside four times them).
package stall

import (
	"bytes"
	"time"
)

var never = make(chan struct{})

// Do acts on b's first word.
func Do(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("spin")):
		for x := len(b); ; x = (x*31 + 7) % 7919 {
			if x < 0 {
				return x
			}
		}
	case bytes.HasPrefix(b, []byte("block")):
		<-never
	case bytes.HasPrefix(b, []byte("sleep")):
		time.Sleep(2 * time.Second)
	}
	return len(b)
}
