// Package injection is a deliberately flawed platform for evaluating the
// security specialist's active probes: stored injection in every metadata
// field and HTML context, reflected injection and path handling on URL
// parameters, and the attack class of the agents behind the call endpoint.
// Every flaw has an escaped or validated twin that must give no finding.
//
// It is a fixture, like testbed, and only for tests: the rules in
// fleet/playbook must never know it (layout_test.go keeps it out of
// production packages, and nothing in the rules names its fields, paths or
// agents). Flaws and twins are listed in Planted; Serve refuses any listen
// address that is not loopback.
//
// Names, metadata and the agents' behaviour live behind a Store: a
// ChainStore over a name registry on a real chain (Deploy puts the
// reference NameRegistry on it and seeds the public names), or a MemStore
// for tests that bring their own tools. The agents are scripted (no model):
// each follows the instructions of one attack family the way a vulnerable
// LLM agent would, and one refuses everything.
package injection
