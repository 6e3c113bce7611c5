package qatools

import "net/url"

// Allows reports whether rawURL passes the allowlist, as qa_fetch would
// check it before connecting; the error (wrapping ErrNotAllowed) says why
// not. Address checks made at connect time (special addresses, DNS answers)
// are not part of it: a fetch does those.
func (a *Allowlist) Allows(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	_, _, err = a.match(u)
	return err
}
