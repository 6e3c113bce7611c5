// Package redteam probes the agents behind the call endpoint with
// versioned probe families: YAML files (families/*.yaml, embedded; more
// through ParseFamily and LoadFamilies) for direct prompt injection,
// disclosure of instructions and credentials, cross-agent access and
// messages shaped like tool calls. Run sends each family's messages to
// every agent and judges the replies by the family's detectors against the
// agent's reply to a greeting and to the family's control message, so only
// what the attack adds counts. The rules are described in package
// specialists (security: agents).
package redteam
