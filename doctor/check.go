package doctor

// Check is one line of `fleetd doctor`: what was checked, whether it
// passed, what was seen, and how to fix it. A fatal check that fails stops
// `fleetd run` from starting; the others are worth knowing but a daemon
// can run.
type Check struct {
	Name   string
	OK     bool
	Fatal  bool
	Warn   bool // a failed warning shows "!" and does not fail doctor: a fallback runs instead
	Detail string
	Fix    string

	// NodeDown marks a check that failed only because the node did not
	// answer: fleetd run starts degraded instead of refusing (FirstFatalUp).
	NodeDown bool
	// NotChecked marks a check that could not run because what it reads
	// did not load: shown with "–", neither passed nor failed.
	NotChecked bool
}
