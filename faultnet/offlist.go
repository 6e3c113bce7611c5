package faultnet

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// OffList is a TCP and a UDP listener on one address (a loopback address
// that is not on a test's allowlist, such as 127.0.0.2) and the same port:
// it records every connection and every datagram that arrives, for tests
// that assert nothing reaches it.
type OffList struct {
	IP   string
	Port int

	mu   sync.Mutex
	seen []string
}

// ListenOffList listens on ip with TCP and UDP, on a port free for both,
// until the test ends.
func ListenOffList(tb testing.TB, ip string) *OffList {
	tb.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			tb.Fatalf("listen on %s: %v", ip, err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("%s:%d", ip, port))
		if err != nil {
			ln.Close()
			continue
		}
		o := &OffList{IP: ip, Port: port}
		tb.Cleanup(func() { ln.Close(); pc.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				o.arrived("tcp from " + c.RemoteAddr().String())
				c.Close()
			}
		}()
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				o.arrived(fmt.Sprintf("udp %d bytes from %s", n, from))
			}
		}()
		return o
	}
	tb.Fatalf("no port free for both TCP and UDP on %s", ip)
	return nil
}

func (o *OffList) arrived(what string) {
	o.mu.Lock()
	o.seen = append(o.seen, what)
	o.mu.Unlock()
}

// Take returns the arrivals so far and forgets them.
func (o *OffList) Take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	got := o.seen
	o.seen = nil
	return got
}

// HostPort is the listeners' address.
func (o *OffList) HostPort() string { return net.JoinHostPort(o.IP, fmt.Sprint(o.Port)) }
