package mcpserver

// SetCallTakenHook makes s call f in each tools/call handler once the run has
// taken the call, with the channel closed when the run ends.
func SetCallTakenHook(s *Server, f func(runDone <-chan struct{})) { s.callTaken = f }
