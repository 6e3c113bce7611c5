package devchain

import (
	"slices"

	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/tracers"
	_ "github.com/ethereum/go-ethereum/eth/tracers/native" // prestateTracer, callTracer, ...
	"github.com/ethereum/go-ethereum/node"
)

// registerTracers adds geth's tracer API (debug_traceCall,
// debug_traceTransaction, ...) as geth's own node does
// (utils.RegisterEthService), with the native tracers: a prestate diff of
// a simulated call is the evidence that it changed storage. JavaScript
// tracers are not linked in.
func registerTracers(stack *node.Node, backend *eth.Ethereum, cfg Config) {
	if !cfg.NoDebug {
		stack.RegisterAPIs(tracers.APIs(backend.APIBackend))
	}
}

// modules are the namespaces served over HTTP: httpModules, plus debug
// unless Config.NoDebug.
func modules(cfg Config) []string {
	if cfg.NoDebug {
		return httpModules
	}
	return append(slices.Clone(httpModules), "debug")
}
