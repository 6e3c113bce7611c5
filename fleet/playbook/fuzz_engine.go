package playbook

// engine runs the tool-side fuzz engine stage (qa_fuzz); see fuzz_engine
// below once the tool exists.
func (f *fuzzer) engine() {}

// fuzzRepo fuzzes target.repo's Go fuzz target (qa_fuzz engine go).
func fuzzRepo(p *probe) {}
