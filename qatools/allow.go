package qatools

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Allows reports whether rawURL passes the allowlist, as qa_fetch would
// check it before connecting; the error (wrapping ErrNotAllowed) says why
// not. Address checks made at connect time (special addresses, DNS answers)
// are not part of it: a fetch does those, and so does DialContext.
func (a *Allowlist) Allows(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	_, _, err = a.match(u)
	return err
}

// DialContext returns a dial function with qa_fetch's connect-time checks,
// for other clients that reach the target (the rendering crawl's proxy):
// the host is resolved once, every address is checked, and a loopback,
// private, link-local or metadata address is dialled only when host:port
// is listed exactly. It does not check the allowlist's patterns (Allows
// does, before a request is sent); a nil lookup is the system resolver.
func (a *Allowlist) DialContext(timeout time.Duration, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	return a.dial(&net.Dialer{Timeout: timeout}, lookup)
}

// dial is the last word on where a connection goes, decided from the
// host:port being dialled: the name is resolved here, every address is
// checked, and the checked address is the one dialled (no second lookup to
// rebind). Only an exactly listed host:port may reach a special address.
func (a *Allowlist) dial(dialer *net.Dialer, lookup func(ctx context.Context, host string) ([]netip.Addr, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		exact := a.exact[strings.ToLower(addr)]
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = lookup(ctx, host); err != nil {
			return nil, err
		}
		var lastErr error = fmt.Errorf("%w: %s resolves to no address", ErrNotAllowed, host)
		for _, ip := range ips {
			if special(ip) && !exact {
				lastErr = fmt.Errorf("%w: %s resolves to %s, a loopback, private, link-local or metadata address", ErrNotAllowed, host, ip)
				continue
			}
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return conn, nil
			}
			lastErr = err
		}
		return nil, lastErr
	}
}
