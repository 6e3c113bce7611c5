// Package mcpserver serves fleetd's jailed qa_* tools over the Model Context
// Protocol, so any MCP client (a coding agent, an IDE assistant, a CLI agent)
// can be a specialist while fleetd keeps every fence.
//
// It is the only package that imports the official Go SDK
// (github.com/modelcontextprotocol/go-sdk); no SDK type crosses its API.
//
// # One session is one run
//
// An MCP session's first tools/call starts one fleetd run through the
// caller's RunFunc, which is the same path `fleetd probe` takes: a sandbox,
// a run record, fleet.Run and its cleanup. The session drives that run as
// its model: the run's Model.Next blocks until the client's next tools/call
// arrives and returns it as the step; the loop then gates it (dial, kill
// switch, deadline, budget), validates it, runs it and records the turn, and
// the narration hook hands the recorded result back to the waiting tools/call.
// When the session ends (the client closes it, disappears, or the HTTP
// session idles out) Next returns done, and the loop writes the footer and
// releases names and sweeps keys as for any run; when the server shuts down
// (SIGTERM) the run's context is cancelled and it ends cancelled. Nothing in
// this package bypasses fleet.Run: every fence, record and cleanup path is
// the planners'.
//
// A session that never calls a tool starts no run and writes no record:
// listing tools, reading the report or getting a prompt is not a probe, and
// a paused fleet can still be inspected. Once a session's run has ended
// (budget spent, kill switch, deadline) its later calls get a tool error
// saying so; a new run needs a new session, so a session's budget cannot be
// renewed by calling again.
//
// # Errors the agent sees
//
// Every outcome of a call the loop decided (a dial refusal, invalid
// arguments, a tool's failure, the run ending) is a tool result with isError
// set and the tool's JSON result as text, e.g.
// {"error":"refused: needs dial exercise, dial is observe","latency_ms":0,"ok":false}:
// data the agent can read, never a protocol error. Protocol errors are kept
// for what MCP defines them for: an unknown tool, a resource that does not
// exist, malformed requests.
//
// # Resources and prompts
//
// fleetd://report/latest is the latest health report as Markdown and JSON;
// fleetd://cluster/{id} is one cluster of it; fleetd://run/{id} is a run
// record (JSONL); fleetd://runs lists recent runs. Report text comes from a
// permissionless log and is untrusted: the resource descriptions say so. A
// prompt per specialist persona lets a client's user say "act as the
// security specialist" in the client's own way.
package mcpserver
