package replay

import (
	"net"
	"net/url"
	"strings"
)

// AllowedURL reports whether raw's host:port matches one of the
// target.fetch_allow patterns, the way qa_fetch decides: an exact
// host[:port] (no port: 80 and 443) or *.suffix for any subdomain.
func AllowedURL(patterns []string, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, p := range patterns {
		p = strings.ToLower(p)
		ph, pp, err := net.SplitHostPort(p)
		if err != nil {
			ph, pp = p, ""
		}
		ph = strings.Trim(ph, "[]")
		if pp != "" && pp != port || pp == "" && port != "80" && port != "443" {
			continue
		}
		if suffix, ok := strings.CutPrefix(ph, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == ph {
			return true
		}
	}
	return false
}

// Origin returns scheme://host[:port] of raw, "" if it has none.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// HostOf returns raw's host[:port].
func HostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}
