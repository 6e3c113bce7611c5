package qatools

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestAllowlistDialContext: the dial function other clients (the rendering
// crawl's proxy) get refuses a wildcard name that resolves into the host's
// own network, as qa_fetch does, and connects when host:port is listed
// exactly or the address is a public one.
func TestAllowlistDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	loopback := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	metadata := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("::ffff:10.0.0.1")}, nil
	}
	for _, tc := range []struct {
		name     string
		patterns []string
		addr     string
		lookup   func(context.Context, string) ([]netip.Addr, error)
		refused  bool
	}{
		{"wildcard name on loopback", []string{"*.fleet.test:" + port}, "app.fleet.test:" + port, loopback, true},
		{"wildcard name on metadata and mapped private", []string{"*.fleet.test:" + port}, "app.fleet.test:" + port, metadata, true},
		{"exact name on loopback", []string{"app.fleet.test:" + port}, "app.fleet.test:" + port, loopback, false},
		{"exact loopback address", []string{"127.0.0.1:" + port}, "127.0.0.1:" + port, nil, false},
		{"loopback address under a wildcard", []string{"*.fleet.test:" + port}, "127.0.0.1:" + port, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAllowlist(tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			c, err := a.DialContext(2*time.Second, tc.lookup)(context.Background(), "tcp", tc.addr)
			if c != nil {
				c.Close()
			}
			if refused := errors.Is(err, ErrNotAllowed); refused != tc.refused {
				t.Errorf("dial %s under %v: err %v, want refused=%v", tc.addr, tc.patterns, err, tc.refused)
			}
			if !tc.refused && err != nil {
				t.Errorf("dial %s: %v", tc.addr, err)
			}
		})
	}
}
