package replay

// StateArgs are qa_report's crash-state arguments: State names the bug
// independently of the input that showed it (qa_compile's crash_state),
// so every input crashing the same way is one fingerprint and one triage
// cluster; Flaky marks a crash whose repro did not reproduce when
// replayed (qa_report posts it at most at low, with flaky=true).
type StateArgs struct {
	State string
	Flaky bool
}

func (s StateArgs) addTo(args map[string]any) {
	if s.State != "" {
		args["state"] = Clip(s.State, 500)
	}
	if s.Flaky {
		args["flaky"] = true
	}
}
