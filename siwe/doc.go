// Package siwe is the EIP-4361 (Sign-In with Ethereum) message format: Build
// writes a message exactly as the specification's ABNF lays it out, Parse
// reads one (a parser of outside input: fuzzed; errors name the line and
// what was wrong). It signs nothing and verifies nothing: the EIP-191
// personal_sign signature over the message's bytes is made and checked in
// chain, where go-ethereum's crypto lives. Fill and IdentityVar read the
// identity placeholders ({address}, :id, ...) of a documented URL
// template: the resources of one account that the two-identity checks
// request with another's session.
package siwe
