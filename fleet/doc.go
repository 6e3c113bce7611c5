// Package fleet is the host of fleetd: the domain types (Finding, Severity,
// Surface, Dial, Kind, Address, and the ranked health Report that triage
// makes and the console, the MCP server and the fix stage read), the qa/v1
// envelope codec, the small contracts that adapters implement, and the
// agent loop that drives them.
//
// fleet imports only the standard library (and the leaf trajectory, the run record format),
// so every adapter and feature can depend on it without dragging SDKs along;
// SDK types stay inside their adapter packages and cross into fleet as the
// types defined here.
package fleet
