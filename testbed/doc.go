// Package testbed is a small, deliberately flawed sample app platform, in the
// spirit of OWASP Juice Shop, for fleetd's probes to find bugs in. It deploys
// a name registry (FlawedRegistry, an INameRegistry) to the chain it is
// given, registers two public names, and serves over HTTP on a loopback
// address: each name's public face (its on-chain metadata rendered as HTML),
// an agent-call endpoint with deterministic replies (no model), llms.txt and
// skill.md. Its compiler, for a tiny language, is the self-contained package
// testbed/compiler.
//
// Every planted flaw is listed in testbed/README.md with how to trigger it and
// what a probe should observe; the package tests check each one manifests.
// The testbed is a fixture for tests, the demo and `fleetd testbed serve`:
// nothing in the fleet's own logic may know its flaws. Never expose it beyond
// loopback: Serve refuses any other address.
package testbed
