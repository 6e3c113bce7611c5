// Package contracts holds the Solidity sources of fleetd's contracts, their
// compiled ABI and bytecode, and go-ethereum abigen v2 bindings:
//
//   - FeedbackLog (FeedbackLog.sol): fleetd's own append-only feedback log,
//     with EIP-712 signed submissions relayed by a sponsor.
//   - FeedbackLogV2 (FeedbackLogV2.sol): the same log with each text in a
//     FeedbackText event and only its keccak256, sender, time and block in
//     storage: a third of the gas for a typical finding (docs/architecture.md).
//   - NameRegistry (NameRegistry.sol): the platform-side name registry
//     interface fleetd probes (INameRegistry) and a reference implementation.
//
// The Solidity compiler is the npm solc package pinned in package.json;
// build/ and the bindings are committed, so building fleetd needs no node or
// npm. `go generate ./chain/...` recompiles and rebinds; the package's tests
// fail when the committed files are stale.
package contracts

import "embed"

// Build holds the committed compiler output: build/<Name>.abi (JSON ABI) for
// every contract and build/<Name>.bin (hex bytecode, no 0x) for every
// deployable one.
//
//go:embed build/*.abi build/*.bin
var Build embed.FS
