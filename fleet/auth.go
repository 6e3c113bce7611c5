package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Auth is the `target.auth` section: how the platform signs a user in
// with Sign-In with Ethereum (EIP-4361), when its docs do not say, and the
// test accounts operators give fleetd by role. Everything is optional: the
// security playbook learns the flow from the docs first.
type Auth struct {
	// Nonce is the URL a GET of which answers a fresh nonce (JSON with a
	// "nonce" field, or the nonce as text).
	Nonce string `yaml:"nonce" json:"nonce,omitempty"`
	// Verify is the URL the signed message is POSTed to as JSON
	// {"message", "signature"}; it answers a session cookie or a token.
	Verify string `yaml:"verify" json:"verify,omitempty"`
	// Logout is the URL that ends a session (POST), if the platform has one.
	Logout string `yaml:"logout" json:"logout,omitempty"`
	// Me is a URL only a signed-in user can read (who am I): it tells a
	// live session from a dead one.
	Me string `yaml:"me" json:"me,omitempty"`
	// ChainID goes into the message's Chain ID; default 1.
	ChainID uint64 `yaml:"chain_id" json:"chain_id,omitempty"`
	// Accounts maps a role (admin, moderator, ...) to a key file (64 hex
	// digits, mode 0600) of a test account the operator made for fleetd.
	// The key signs sign-in messages and nothing else; it never leaves
	// fleetd and is redacted from run records.
	Accounts map[string]string `yaml:"accounts" json:"-"`
}

// identityName is what an identity or a role may be called: it shows in
// findings and tool arguments.
var identityName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// CheckIdentityName refuses an identity name that is not a lowercase word
// (letters, digits, '-' and '_', at most 32).
func CheckIdentityName(s string) error {
	if !identityName.MatchString(s) {
		return fmt.Errorf("identity %q: want a lowercase word of at most 32 letters, digits, - or _", s)
	}
	return nil
}

// Validate checks a; errors name the field under prefix.
func (a *Auth) Validate(prefix string) error {
	var errs []error
	for _, f := range []struct{ name, v string }{{"nonce", a.Nonce}, {"verify", a.Verify}, {"logout", a.Logout}, {"me", a.Me}} {
		if f.v == "" {
			continue
		}
		if err := checkHTTPURL(f.v); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", prefix, f.name, err))
		}
	}
	if (a.Nonce == "") != (a.Verify == "") {
		errs = append(errs, fmt.Errorf("%s: nonce and verify go together (the flow's two steps)", prefix))
	}
	roles := slices.Sorted(func(yield func(string) bool) {
		for r := range a.Accounts {
			if !yield(r) {
				return
			}
		}
	})
	for _, r := range roles {
		if err := CheckIdentityName(r); err != nil {
			errs = append(errs, fmt.Errorf("%s.accounts: %w", prefix, err))
		}
		if strings.TrimSpace(a.Accounts[r]) == "" {
			errs = append(errs, fmt.Errorf("%s.accounts.%s: empty (a key file)", prefix, r))
		}
	}
	return errors.Join(errs...)
}
