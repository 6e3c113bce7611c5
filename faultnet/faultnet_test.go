package faultnet

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFaults sends requests through the proxy to a real HTTP server and
// checks each fault does to the client what it names, aimed by the request's
// bytes, and is counted.
func TestFaults(t *testing.T) {
	body := strings.Repeat("x", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(body))
	}))
	defer srv.Close()
	p, err := Start(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetRule(func(req []byte) Fault {
		switch {
		case bytes.Contains(req, []byte("latency")):
			return Fault{Kind: Latency, Delay: 300 * time.Millisecond}
		case bytes.Contains(req, []byte("reset")):
			return Fault{Kind: Reset}
		case bytes.Contains(req, []byte("truncate")):
			return Fault{Kind: Truncate, Bytes: 20}
		case bytes.Contains(req, []byte("blackhole")):
			return Fault{Kind: Blackhole}
		case bytes.Contains(req, []byte("slowclose")):
			return Fault{Kind: SlowClose, Delay: 100 * time.Millisecond}
		}
		return Fault{}
	})
	// A connection per request: a kept-alive one that SetDown cut would fail
	// the next request before the proxy could refuse (and count) a new one.
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(what string) (string, time.Duration, error) {
		start := time.Now()
		resp, err := hc.Post("http://"+p.Addr()+"/", "text/plain", strings.NewReader(what))
		if err != nil {
			return "", time.Since(start), err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), time.Since(start), err
	}
	if got, _, err := post("clean"); err != nil || got != body {
		t.Fatalf("clean request: %d bytes, %v", len(got), err)
	}
	if got, took, err := post("latency"); err != nil || got != body || took < 300*time.Millisecond {
		t.Errorf("latency: %d bytes in %s, %v; want the body after >= 300ms", len(got), took, err)
	}
	for _, what := range []string{"reset", "truncate"} {
		if got, _, err := post(what); err == nil && got == body {
			t.Errorf("%s: the whole body arrived", what)
		}
	}
	if _, took, err := post("blackhole"); err == nil || took < 2*time.Second {
		t.Errorf("blackhole: answered after %s (%v); want the client's timeout", took, err)
	}
	if got, _, err := post("slowclose"); err != nil || got != body {
		t.Errorf("slow close: %d bytes, %v; want the whole body", len(got), err)
	}
	p.SetDown(true)
	if _, _, err := post("clean"); err == nil {
		t.Error("down: a request went through")
	}
	p.SetDown(false)
	if got, _, err := post("clean"); err != nil || got != body {
		t.Errorf("up again: %d bytes, %v", len(got), err)
	}
	c := p.Counts()
	for _, k := range []Kind{Latency, Reset, Truncate, Blackhole, SlowClose, Refuse} {
		if c[k] < 1 {
			t.Errorf("%s injected %d times, want >= 1 (counts %v)", k, c[k], c)
		}
	}
	t.Logf("faults injected: %v", c)
}

// TestSetUpstream: a dependency restarted on another port keeps its
// clients' address; new connections reach the new upstream.
func TestSetUpstream(t *testing.T) {
	serve := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
	}
	a, b := serve("a"), serve("b")
	defer a.Close()
	defer b.Close()
	p, err := Start(strings.TrimPrefix(a.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() string {
		resp, err := hc.Get("http://" + p.Addr() + "/")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		s, _ := io.ReadAll(resp.Body)
		return string(s)
	}
	if got := get(); got != "a" {
		t.Fatalf("before: %q, want a", got)
	}
	p.SetUpstream(strings.TrimPrefix(b.URL, "http://"))
	if got := get(); got != "b" {
		t.Errorf("after SetUpstream: %q, want b", got)
	}
}

// TestOffListSeesTCPAndUDP: a connection and a datagram both arrive, and
// Take forgets them.
func TestOffListSeesTCPAndUDP(t *testing.T) {
	o := ListenOffList(t, "127.0.0.2")
	c, err := net.Dial("tcp", o.HostPort())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	u, err := net.Dial("udp", o.HostPort())
	if err != nil {
		t.Fatal(err)
	}
	u.Write([]byte("x"))
	u.Close()
	var got []string
	for deadline := time.Now().Add(2 * time.Second); len(got) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		got = append(got, o.Take()...)
	}
	if len(got) != 2 || len(o.Take()) != 0 {
		t.Fatalf("arrivals %q", got)
	}
}
