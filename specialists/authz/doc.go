// Package authz is security's two-identity checks behind a Sign-In with
// Ethereum login (issue 33): it learns the login flow from the target's
// docs (the nonce and verify endpoints, the chain id, logout, who-am-I,
// the endpoints the docs reserve for a role, the fields they list as
// writable; target.auth for what the docs do not say), signs fresh
// throwaway identities in with qa_login, and asks of the platform what
// only two accounts can show (OWASP API Security Top 10, 2023):
//
//   - object-level authorization (API1): identity A's resources (URLs the
//     docs template with an address or id, filled with A's) requested with
//     B's session;
//   - function-level authorization (API5): endpoints the docs reserve for a
//     role (admin), read by a plain fresh identity;
//   - property-level authorization (API3): privilege fields (role,
//     verified, owner, balance, ...) the answer shows but the docs do not
//     list as writable, sent in an update of B's own resource, and their
//     effect read back;
//   - the session lifecycle (API2): a session still answered after logout,
//     a sign-in that gives back the session it was sent (no rotation);
//   - the sign-in's verification (API2): qa_login's tampers (a replayed
//     nonce, a foreign domain or URI, another chain id, an expired message,
//     a signature by another key).
//   - the crawl behind the login: the pages and routes only A's session
//     reaches (from who-am-I and A's resources, along the links their
//     answers hold; GET only, allowlisted, never a sign-out link), and the
//     internals they leak.
//
// Learn gives the flow to ux as well: a documented endpoint that refuses
// a caller without a session is behind it.
//
// Every check signs in identities of its own, fresh for the run (never
// anyone else's), and writes only to their own resources. A finding says
// who did what ("identity b (a fresh account) read identity a's ...")
// and names the fields that prove it, never their values. Its repro is
// one qa_authz call, which signs in fresh identities of its own (no
// address, session or data of this run's identities in it), so a feedback
// entry, `fleetd runs replay` and the fix stage's reproduce step can each
// show it again; a finding is filed at high only once that repro, run
// once more, showed it again. At observe qa_login is refused by the dial, and
// nothing behind the login is requested.
package authz
