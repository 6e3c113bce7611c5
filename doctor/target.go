package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
)

// TargetURLs checks every URL the probes use is allowed by
// target.fetch_allow and answers, through the same fetcher the probes use
// (allowlist, SSRF rules and all), each fetch bounded by fetchTimeout
// (tools.fetch_timeout; 0: 10s).
func TargetURLs(ctx context.Context, t fleet.Target, fetchTimeout time.Duration) []Check {
	allow, err := qatools.NewAllowlist(t.FetchAllow)
	if err != nil {
		return []Check{{Name: "fetch_allow", Fatal: true, Detail: err.Error(), Fix: "fix target.fetch_allow"}}
	}
	if fetchTimeout <= 0 {
		fetchTimeout = 10 * time.Second
	}
	f := qatools.NewFetcher(allow, fetchTimeout, 4<<10)
	name := "example"
	if len(t.Names) > 0 {
		name = t.Names[0]
	}
	urls := []struct{ what, url string }{{"target.faces", t.FaceURL(name)}, {"target.call", t.Call}}
	for i, d := range t.Docs {
		urls = append(urls, struct{ what, url string }{fmt.Sprintf("target.docs[%d]", i), d})
	}
	var out []Check
	for _, u := range urls {
		c := Check{Name: "url " + u.what}
		if err := allow.Allows(u.url); err != nil {
			c.Fatal = true
			c.Detail = err.Error()
			c.Fix = "add its host:port to target.fetch_allow"
			out = append(out, c)
			continue
		}
		res, err := f.Get(ctx, u.url)
		switch {
		case err != nil:
			c.Detail = fmt.Sprintf("%s: %v", u.url, err)
		case !res.IsOK():
			c.Detail = fmt.Sprintf("%s: %s", u.url, res.Err())
			c.Fix = "check the platform is up and the URL is right (probes will report it unreachable)"
		default:
			c.OK = true
			c.Detail = fmt.Sprintf("%s answers %v", u.url, res["status"])
		}
		out = append(out, c)
	}
	return out
}

// Trust says whether the fleet's own findings (addr) count in triage
// everywhere this config is used. Triage always trusts the identity of the
// process running it, but a non-empty chain.trusted_senders (trusted)
// without the fleet's address means processes with other identities will
// flag its findings.
func Trust(addr fleet.Address, trusted []string) Check {
	c := Check{Name: "trusted", OK: true}
	if len(trusted) == 0 {
		c.Detail = fmt.Sprintf("triage trusts %s as this fleet's identity (chain.trusted_senders is empty: other senders' findings are flagged)", addr)
		return c
	}
	for _, s := range trusted {
		if t, err := fleet.ParseAddress(s); err == nil && t == addr {
			c.Detail = fmt.Sprintf("%s is in chain.trusted_senders", addr)
			return c
		}
	}
	c.OK = false
	c.Detail = fmt.Sprintf("%s is not in chain.trusted_senders: fleetd processes with another identity will flag its findings as untrusted", addr)
	c.Fix = "add " + addr.String() + " to chain.trusted_senders"
	return c
}
