package contracts

// Regenerate with `go generate ./chain/...` (needs node and npm; building and
// testing fleetd does not). npm ci runs only when node_modules lacks solc;
// compile.js refuses a node_modules whose solc differs from package.json.
//
//go:generate sh -c "test -f node_modules/solc/package.json || npm ci --no-audit --no-fund"
//go:generate node compile.js --out build FeedbackLog.sol FeedbackLogV2.sol NameRegistry.sol
//go:generate go run ./internal/gen -build build -out .
