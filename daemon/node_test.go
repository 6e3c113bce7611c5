package daemon

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/httpapi"
)

func TestPublicURLHidesKeys(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8545":                      "http://127.0.0.1:8545",
		"https://mainnet.infura.io/v3/0123456789abc": "https://mainnet.infura.io/…",
		"https://user:secret@node.example/":          "https://node.example/…",
		"https://node.example/?apikey=secret":        "https://node.example/…",
		"not a url":                                  "(hidden)",
	} {
		if got := PublicURL(in); got != want {
			t.Errorf("PublicURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestNodeErrorHidesTheKey: the error a tool call gets while the node is
// down names the node by its public URL; an API key in chain.rpc (hosted
// nodes put it in the path) does not reach the MCP client. A real lazy
// client against a port nothing listens on.
func TestNodeErrorHidesTheKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rpc := "http://" + addr + "/v3/sekrit-api-key"
	cl, err := chain.Dial(context.Background(), rpc, chain.Options{Timeout: 2 * time.Second, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := &Node{Ping: cl.Ping, RPC: rpc, Metrics: httpapi.NewMetrics()}
	err = n.Ready(context.Background())
	if err == nil {
		t.Fatal("ready with nothing listening: nil")
	}
	msg := err.Error()
	if strings.Contains(msg, "sekrit") || !strings.Contains(msg, "chain node http://"+addr+"/… does not answer") || !strings.Contains(msg, "connection refused") {
		t.Errorf("ready: %q; want the public URL, the cause, and no key", msg)
	}
}

// TestNodeWatchCatchesUpOnce: a node down at start is retried with backoff
// until it answers; the catch-up (OnBack) runs once when it does, Watch
// with untilUp then returns, and the state says up since then, with the
// one outage counted.
func TestNodeWatchCatchesUpOnce(t *testing.T) {
	old := RetryMin
	RetryMin = 5 * time.Millisecond
	t.Cleanup(func() { RetryMin = old })
	var pings, backs atomic.Int32
	n := &Node{
		Ping: func(context.Context) error {
			if pings.Add(1) < 4 {
				return errors.New("connection refused")
			}
			return nil
		},
		RPC:    "http://127.0.0.1:1/v3/key",
		OnBack: func(context.Context) { backs.Add(1) },
	}
	if up, back := n.Check(t.Context()); up || back {
		t.Fatalf("first check: up %v back %v, want down", up, back)
	}
	if st := n.Status(); st.Up || st.Outages != 1 || st.Error != "connection refused" {
		t.Errorf("status after a failed check: %+v", st)
	}
	stop := n.Watch(t.Context(), true, func(context.Context) { t.Error("whileUp ran for an untilUp watch") })
	fleettest.WaitFor(t, 10*time.Second, "the node to answer", n.Up)
	stop() // returns: the watch ended when the node answered
	if got := backs.Load(); got != 1 {
		t.Errorf("OnBack ran %d times, want once", got)
	}
	if up, back := n.Check(t.Context()); !up || back {
		t.Errorf("a check while up: up %v back %v, want up and not back", up, back)
	}
	if got := backs.Load(); got != 1 {
		t.Errorf("OnBack ran again while the node stayed up (%d)", got)
	}
	if st := n.Status(); !st.Up || st.Outages != 1 || st.Error != "" {
		t.Errorf("status when up: %+v", st)
	}
}

// TestNodeWatchWhileUp: a watch that runs on calls whileUp at each check
// that finds the node answering, and stops when asked.
func TestNodeWatchWhileUp(t *testing.T) {
	old := CheckEvery
	CheckEvery = 5 * time.Millisecond
	t.Cleanup(func() { CheckEvery = old })
	n := &Node{Ping: func(context.Context) error { return nil }}
	if up, back := n.Check(t.Context()); !up || !back {
		t.Fatalf("first check of a node that answers: up %v back %v", up, back)
	}
	var ups atomic.Int32
	stop := n.Watch(t.Context(), false, func(context.Context) { ups.Add(1) })
	fleettest.WaitFor(t, 10*time.Second, "three checks while up", func() bool { return ups.Load() >= 3 })
	stop()
	seen := ups.Load()
	time.Sleep(20 * time.Millisecond) // four check periods: a stopped watch checks no more
	if got := ups.Load(); got != seen {
		t.Errorf("whileUp ran %d more times after stop", got-seen)
	}
}
