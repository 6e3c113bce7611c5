package specialists

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Surface limits: selectors simulated and simulations in all (a selector
// is tried with up to four argument patterns until one writes storage).
const (
	surfSelectors   = 24
	surfSimulations = 56
)

// platformPublic are the state-changing functions of the platform
// interfaces fleetd knows (chain/contracts: INameRegistry, FeedbackLog v1
// and v2): anyone may call them by design, so a stranger's call that
// changes storage through them is expected. registry_surface_test.go
// checks the list against the committed ABIs.
var platformPublic = []string{
	"register(string)", "release(string)", "setMetadata(string,bytes32,bytes)",
	"submitFeedback(string)", "submitFeedbackFor(address,string,bytes32,uint256,uint256,bytes)",
}

// commonPublic are functions any holder calls on many contracts (token
// transfers and approvals): a stranger changing its own entries through
// them is expected.
var commonPublic = []string{
	"approve(address,uint256)", "transfer(address,uint256)", "transferFrom(address,address,uint256)",
	"setApprovalForAll(address,bool)", "safeTransferFrom(address,address,uint256)", "safeTransferFrom(address,address,uint256,bytes)",
	"increaseAllowance(address,uint256)", "decreaseAllowance(address,uint256)", "deposit()", "multicall(bytes[])",
}

// platformReads are the read functions of the platform interface
// (DESIGN.md's name registry) and of fleetd's own feedback log.
var platformReads = []string{"ownerOf(string)", "metadata(string,bytes32)", "feedbackCount()"}

// knownSignatures name selectors no ABI at hand names: the field's
// privileged and common functions, most common in deployed contracts
// first: OpenZeppelin's Ownable and Ownable2Step, AccessControl, Pausable,
// token mint and burn, withdrawals, UUPS and transparent-proxy upgrades,
// initializers, then older hand-written admin setters and self-destructs,
// then the common reads. A platform's own admin functions are named by
// its ABI, its docs, the signatures its pages and bytecode show or
// target.admin_functions, never by this list. Naming only sets the
// arguments tried and the words of a finding; every selector in the code
// is simulated, named or not.
var knownSignatures = []string{
	"transferOwnership(address)", "renounceOwnership()", "grantRole(bytes32,address)", "revokeRole(bytes32,address)",
	"renounceRole(bytes32,address)", "pause()", "unpause()", "mint(address,uint256)", "burn(uint256)",
	"withdraw()", "upgradeTo(address)", "upgradeToAndCall(address,bytes)", "acceptOwnership()",
	"initialize()", "initialize(address)", "burn(address,uint256)", "withdraw(uint256)", "withdraw(address,uint256)",
	"setOwner(address)", "changeOwner(address)", "setAdmin(address)", "changeAdmin(address)",
	"setFee(uint256)", "setPrice(uint256)", "setFeeRecipient(address)", "setTreasury(address)",
	"kill()", "destroy()", "selfDestruct()",
	"owner()", "admin()", "paused()", "name()", "symbol()", "decimals()", "totalSupply()", "balanceOf(address)", "version()",
}

// privilegedName: a function name that says it changes who controls the
// contract, its funds or its rules.
// Setters in general (setX), mint and burn are not on the list: public
// functions are often named so (a primary name, a public sale).
var privilegedName = regexp.MustCompile(`(?i)owner|admin|role|pause|upgrade|withdraw|sweep|rescue|drain|fee|treasury|price|config|kill|destroy|migrat|emergency|force|reset|grant|revoke|initiali[sz]e|authori[sz]e|whitelist|allowlist|blacklist|blocklist|curator|operator|guardian|governor`)

// surfFn is one selector of the registry and what is known about it.
type surfFn struct {
	sel    [4]byte
	fn     evm.Function // zero Signature: unnamed
	source string       // where the name came from
}

func (f surfFn) label() string {
	s := fmt.Sprintf("0x%x", f.sel)
	if f.fn.Signature != "" {
		return f.fn.Signature + " (selector " + s + ", named from " + f.source + ")"
	}
	return "selector " + s + " (no ABI at hand names it)"
}

// secRegistrySurface reads the registry's functions from its runtime
// bytecode and simulates every one that may change state from a fresh
// address; see the package doc. It returns the selectors it read, named where it could (nil when it
// read none), for the key checks to find the registry's roles.
func secRegistrySurface(p *replay.Play, pages []replay.Page, files []ABI) []surfFn {
	t := p.Target()
	if t.Registry == "" {
		p.Skip("target.registry not configured: the registry's surface not read")
		return nil
	}
	if !p.Can("qa_chain") || !p.Room(2) {
		p.Skip("qa_chain unavailable: the registry's surface not read")
		return nil
	}
	r := p.Chain("eth_getCode", t.Registry, "latest")
	if !r.IsOK() {
		p.Skip("eth_getCode of the registry failed (%s): its surface not read", replay.Clip(r.Err(), 120))
		return nil
	}
	var codeHex string
	if err := json.Unmarshal(rpcResult(r), &codeHex); err != nil {
		p.Skip("eth_getCode of the registry answered %s, not hex code: its surface not read", replay.Quote(string(rpcResult(r)), 60))
		return nil
	}
	code, err := hex.DecodeString(strings.TrimPrefix(codeHex, "0x"))
	if err != nil {
		p.Skip("eth_getCode of the registry answered %s, not hex code: its surface not read", replay.Quote(codeHex, 60))
		return nil
	}
	read, err := evm.Selectors(code)
	if err != nil {
		p.Skip("the registry %s: %v", t.Registry, err)
		return nil
	}
	fns := nameSelectors(read.Selectors, t.AdminFunctions, append(slices.Clone(files), fetchABIs(p)...), pages)
	for _, sig := range t.AdminFunctions {
		if !slices.Contains(read.Selectors, evm.Selector(strings.ReplaceAll(sig, " ", ""))) {
			p.Notef("target.admin_functions lists %s, but the registry's dispatcher has no selector for it", sig)
		}
	}
	var todo []surfFn
	for _, f := range fns {
		switch {
		case f.fn.ReadOnly():
		case slices.Contains(platformPublic, f.fn.Signature), slices.Contains(commonPublic, f.fn.Signature):
		case slices.ContainsFunc(t.AdminFunctions, func(s string) bool { return strings.ReplaceAll(s, " ", "") == f.fn.Signature }):
			// secAdminFunctions simulated it already.
		default:
			todo = append(todo, f)
		}
	}
	p.Notef("registry surface: %d selectors in the dispatcher (%d named), %d simulated from a fresh address", len(fns), countNamed(fns), min(len(todo), surfSelectors))
	s := &surfSim{p: p, reg: t.Registry, from: strangerAddress(p), fns: fns}
	for _, f := range replay.First(todo, surfSelectors) {
		if !s.try(f) {
			break
		}
	}
	if s.quiet > 0 {
		p.Notef("%d registry function(s) without a privileged name succeed when a stranger calls them (%s); without debug_traceCall whether they change storage is not known", s.quiet, s.method)
	}
	return fns
}

func countNamed(fns []surfFn) int {
	n := 0
	for _, f := range fns {
		if f.fn.Signature != "" {
			n++
		}
	}
	return n
}

// fetchABIs fetches the URLs of target.abis (qa_fetch, on the allowlist)
// and parses each as a JSON ABI; one that cannot be fetched or parsed is
// a note naming it and why.
func fetchABIs(p *replay.Play) []ABI {
	var out []ABI
	for _, u := range p.Target().ABIs {
		if !fleet.IsURL(u) {
			continue
		}
		if !replay.AllowedURL(p.Target().FetchAllow, u) {
			p.Notef("target.abis %s is off the fetch allowlist: not read", u)
			continue
		}
		r, ok := p.Get(u)
		switch {
		case !ok:
			p.Notef("target.abis %s not fetched (no qa_fetch or no call left)", u)
		case !replay.Answered(r):
			p.Notef("target.abis %s did not answer (%s): not read", u, replay.Clip(r.Err(), 100))
		case replay.Status(r) >= 400:
			p.Notef("target.abis %s answered HTTP %d: not read", u, replay.Status(r))
		default:
			fns, err := evm.ParseABI([]byte(replay.Body(r)))
			if err == nil && len(fns) == 0 {
				err = errors.New("no function in it")
			}
			if err != nil {
				p.Notef("target.abis %s is not a JSON contract ABI: %s", u, replay.Clip(err.Error(), 120))
				continue
			}
			out = append(out, ABI{Source: "target.abis " + u, Functions: fns})
		}
	}
	return out
}

// nameSelectors names each selector from, in order: target.admin_functions,
// the ABIs of target.abis, ABIs and signatures on the crawled pages, the
// platform ABIs fleetd knows and the common signatures.
func nameSelectors(sels [][4]byte, admin []string, abis []ABI, pages []replay.Page) []surfFn {
	names := map[[4]byte]surfFn{}
	add := func(f evm.Function, source string) {
		sel := f.Selector()
		if _, ok := names[sel]; !ok && slices.Contains(sels, sel) {
			names[sel] = surfFn{sel: sel, fn: f, source: source}
		}
	}
	for _, s := range admin {
		add(evm.Function{Signature: strings.ReplaceAll(s, " ", "")}, "target.admin_functions")
	}
	for _, a := range abis {
		for _, f := range a.Functions {
			add(f, a.Source)
		}
	}
	for _, pg := range pages {
		if !pg.OK() {
			continue
		}
		body := replay.Body(pg.Res)
		if crawl.Sniff(pg.URL, replay.Str(pg.Res, "content_type"), body) == crawl.KindJSON && strings.Contains(body, `"function"`) {
			if abi, err := evm.ParseABI([]byte(body)); err == nil {
				for _, f := range abi {
					add(f, "the ABI at "+pg.URL)
				}
			}
		}
		for _, f := range signaturesMemo.Get(body, evm.SignaturesIn) {
			add(f, pg.URL)
		}
	}
	for _, s := range platformPublic {
		add(evm.Function{Signature: s, Mutability: "nonpayable"}, "the platform interface")
	}
	for _, s := range commonPublic {
		add(evm.Function{Signature: s, Mutability: "nonpayable"}, "common signatures")
	}
	for _, s := range platformReads {
		add(evm.Function{Signature: s, Mutability: "view"}, "the platform interface")
	}
	for _, s := range knownSignatures {
		f := evm.Function{Signature: s}
		if strings.HasSuffix(s, "()") && !privilegedName.MatchString(f.Name()) || s == "owner()" || s == "admin()" || s == "paused()" ||
			strings.HasPrefix(s, "balanceOf(") {
			f.Mutability = "view"
		}
		add(f, "common signatures")
	}
	out := make([]surfFn, 0, len(sels))
	for _, sel := range sels {
		if f, ok := names[sel]; ok {
			out = append(out, f)
		} else {
			out = append(out, surfFn{sel: sel})
		}
	}
	return out
}

var signaturesMemo replay.Memo[[]evm.Function]

// strangerAddress is a fresh address per target: no key exists for it, it
// holds nothing and has never sent anything.
func strangerAddress(p *replay.Play) [20]byte {
	h := evm.Keccak256([]byte(fmt.Sprintf("fleetd stranger %x", p.TargetSeed())))
	return [20]byte(h[12:])
}

// surfSim simulates calls from the stranger with the best method the node
// offers: debug_traceCall's prestate diff, else eth_simulateV1, else
// eth_call.
type surfSim struct {
	p      *replay.Play
	reg    string
	from   [20]byte
	method string // "" until the first simulation chose one
	calls  int
	dead   bool // no simulation method works: stop
	quiet  int  // calls that succeeded without a trace, not reported
	fns    []surfFn
}

var surfMethods = []string{"debug_traceCall", "eth_simulateV1", "eth_call"}

// unavailable reports whether an error says the node (or qa_chain) does
// not offer the method, rather than that the call failed.
func unavailable(err string) bool {
	e := strings.ToLower(err)
	for _, w := range []string{"does not exist", "not available", "not supported", "not found", "unsupported", "not a read-only method", "unknown method", "not configured"} {
		if strings.Contains(e, w) {
			return true
		}
	}
	return false
}

// argPatterns are the calldata tried for f: zero values and derived ones
// (the caller's address, 42: a number no counter steps to from zero, a
// short text) for a named function; for an unnamed one, the bare selector
// and one or two words (the caller's address, 1).
func (s *surfSim) argPatterns(f surfFn) [][]byte {
	fill := evm.Fill{Caller: s.from, Word: 42, Text: fmt.Sprintf("qa-%x", s.from[:3])}
	if f.fn.Signature != "" {
		var out [][]byte
		for _, fl := range []evm.Fill{{Zero: true}, fill} {
			if d, err := evm.Calldata(f.fn.Signature, fl); err == nil {
				out = append(out, d)
			}
		}
		return out
	}
	addr := make([]byte, 32)
	copy(addr[12:], s.from[:])
	one := make([]byte, 32)
	one[31] = 1
	cat := func(parts ...[]byte) []byte { return slices.Concat(append([][]byte{f.sel[:]}, parts...)...) }
	return [][]byte{cat(), cat(addr), cat(one), cat(addr, one)}
}

// try simulates f with each argument pattern until one changes storage (or,
// without a trace, succeeds); it reports what it found and returns false
// once no call is left.
func (s *surfSim) try(f surfFn) bool {
	for _, data := range s.argPatterns(f) {
		if s.calls == surfSimulations || !s.p.Room(2) {
			return false
		}
		ev, ok := s.simulate(data)
		if s.dead {
			return false
		}
		if !ok {
			continue
		}
		switch {
		case ev.changed():
		case ev.method == "debug_traceCall" || !ev.succeeded:
			continue
		case ev.method == "eth_simulateV1" && s.p.Room(3):
			// Without a trace a getter succeeds as well as a setter: what
			// the registry's own zero-argument functions return before and
			// after the call tells them apart.
			if seen, ok := s.observe(f, data); ok && len(seen.views) > 0 {
				ev = seen
				break
			}
			fallthrough
		case f.fn.Signature == "" || !privilegedName.MatchString(f.fn.Name()):
			// Only a name that says privileged makes success telling.
			s.quiet++
			return true
		}
		s.report(f, data, ev)
		return true
	}
	return true
}

// evidence is what one simulation showed.
type evidence struct {
	method    string
	args      map[string]any // the qa_chain call, for the repro
	succeeded bool           // did not revert (eth_call, eth_simulateV1)
	gasUsed   uint64
	slots     []slotChange // storage of the registry the call changed (debug_traceCall)
	views     []viewChange // answers of the registry's readers the call changed (eth_simulateV1)
}

type slotChange struct{ slot, before, after string }

// viewChange is a zero-argument function of the registry whose answer the
// call changed (eth_simulateV1, without a trace).
type viewChange struct{ reader, before, after string }

func (e evidence) changed() bool { return len(e.slots) > 0 || len(e.views) > 0 }

// surfReaders bounds the zero-argument functions read around a call.
const surfReaders = 6

// readers are the registry's functions that take no arguments (named so,
// or unnamed), but skip.
func (s *surfSim) readers(skip [4]byte) []surfFn {
	var out []surfFn
	for _, f := range s.fns {
		if f.sel == skip || f.fn.Signature != "" && (!strings.HasSuffix(f.fn.Signature, "()") || !f.fn.ReadOnly() && privilegedName.MatchString(f.fn.Name())) {
			continue
		}
		if len(out) == surfReaders {
			break
		}
		out = append(out, f)
	}
	return out
}

// observe simulates data between two reads of every reader, in one
// eth_simulateV1 block, and keeps the readers whose answer changed.
func (s *surfSim) observe(f surfFn, data []byte) (evidence, bool) {
	rs := s.readers(f.sel)
	if len(rs) == 0 {
		return evidence{}, false
	}
	from, to := "0x"+hex.EncodeToString(s.from[:]), strings.ToLower(s.reg)
	var calls []any
	read := func() {
		for _, r := range rs {
			calls = append(calls, map[string]any{"from": from, "to": to, "data": fmt.Sprintf("0x%x", r.sel)})
		}
	}
	read()
	calls = append(calls, map[string]any{"from": from, "to": to, "data": "0x" + hex.EncodeToString(data)})
	read()
	args := map[string]any{"method": "eth_simulateV1", "params": []any{map[string]any{"blockStateCalls": []any{map[string]any{"calls": calls}}}, "latest"}}
	s.calls++
	r := s.p.Call("qa_chain", args)
	if !r.IsOK() {
		return evidence{}, false
	}
	ev := evidence{method: "eth_simulateV1", args: args, succeeded: true, views: viewChanges(rpcResult(r), rs)}
	return ev, true
}

// viewChanges compares the readers' answers before and after the middle
// call of an observe simulation; nil when that call failed.
func viewChanges(raw json.RawMessage, rs []surfFn) []viewChange {
	var blocks []struct {
		Calls []struct {
			Status     string `json:"status"`
			ReturnData string `json:"returnData"`
		} `json:"calls"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 || len(blocks[0].Calls) != 2*len(rs)+1 {
		return nil
	}
	cs := blocks[0].Calls
	if cs[len(rs)].Status != "0x1" {
		return nil
	}
	var out []viewChange
	for i, r := range rs {
		b, a := cs[i], cs[len(rs)+1+i]
		if b.Status == "0x1" && a.Status == "0x1" && !strings.EqualFold(b.ReturnData, a.ReturnData) {
			name := fmt.Sprintf("selector 0x%x", r.sel)
			if r.fn.Signature != "" {
				name = r.fn.Signature
			}
			out = append(out, viewChange{reader: name, before: strings.ToLower(b.ReturnData), after: strings.ToLower(a.ReturnData)})
		}
	}
	return out
}

// simulate runs one call with the chosen method, choosing it on the first
// call: a method the node (or qa_chain) does not offer moves to the next.
// ok is false when this simulation did not run; s.dead is set when none
// can.
func (s *surfSim) simulate(data []byte) (evidence, bool) {
	start := 0
	if s.method != "" {
		start = slices.Index(surfMethods, s.method)
	}
	for i := start; i < len(surfMethods); i++ {
		m := surfMethods[i]
		args := s.args(m, data)
		s.calls++
		r := s.p.Call("qa_chain", args)
		switch {
		case r.IsOK():
			s.method = m
			return s.parse(m, args, r), true
		case m == "eth_call" && strings.Contains(strings.ToLower(r.Err()), "revert"):
			s.method = m // qa_chain answers a reverted eth_call with an error
			return evidence{method: m, args: args}, true
		case s.method == m:
			s.p.Notef("simulating with %s failed (%s)", m, replay.Clip(r.Err(), 100))
			return evidence{}, false
		case !unavailable(r.Err()):
			s.p.Skip("simulating the registry's functions with %s failed (%s): its surface not checked", m, replay.Clip(r.Err(), 100))
			s.dead = true
			return evidence{}, false
		}
		if i+1 < len(surfMethods) {
			s.p.Notef("%s is not available (%s): simulating with %s", m, replay.Clip(r.Err(), 80), surfMethods[i+1])
		}
		if !s.p.Room(2) {
			s.dead = true
			return evidence{}, false
		}
	}
	s.p.Skip("the node offers none of %s: the registry's surface not simulated", strings.Join(surfMethods, ", "))
	s.dead = true
	return evidence{}, false
}

// args is the qa_chain call simulating data with method m.
func (s *surfSim) args(m string, data []byte) map[string]any {
	call := map[string]any{"from": "0x" + hex.EncodeToString(s.from[:]), "to": strings.ToLower(s.reg), "data": "0x" + hex.EncodeToString(data)}
	var params []any
	switch m {
	case "debug_traceCall":
		params = []any{call, "latest", map[string]any{"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}}}
	case "eth_simulateV1":
		params = []any{map[string]any{"blockStateCalls": []any{map[string]any{"calls": []any{call}}}}, "latest"}
	default:
		params = []any{call, "latest"}
	}
	return map[string]any{"method": m, "params": params}
}

// parse reads a simulation's answer.
func (s *surfSim) parse(m string, args map[string]any, r fleet.Result) evidence {
	ev := evidence{method: m, args: args}
	raw := rpcResult(r)
	switch m {
	case "debug_traceCall":
		ev.slots = storageDiff(raw, s.reg)
	case "eth_simulateV1":
		var blocks []struct {
			Calls []struct {
				Status  string `json:"status"`
				GasUsed string `json:"gasUsed"`
			} `json:"calls"`
		}
		if json.Unmarshal(raw, &blocks) == nil && len(blocks) > 0 && len(blocks[0].Calls) > 0 {
			c := blocks[0].Calls[0]
			ev.succeeded = c.Status == "0x1"
			if g, ok := new(big.Int).SetString(strings.TrimPrefix(c.GasUsed, "0x"), 16); ok && g.IsUint64() {
				ev.gasUsed = g.Uint64()
			}
		}
	default:
		ev.succeeded = !replay.Flag(r, "reverted") // a revert comes back as a tool error, not here
	}
	return ev
}

// storageDiff returns the registry's storage slots a prestate diff shows
// changed, sorted by slot.
func storageDiff(raw json.RawMessage, reg string) []slotChange {
	type acct struct {
		Storage map[string]string `json:"storage"`
	}
	var d struct {
		Pre  map[string]acct `json:"pre"`
		Post map[string]acct `json:"post"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return nil
	}
	find := func(m map[string]acct) acct {
		for a, v := range m {
			if strings.EqualFold(a, reg) {
				return v
			}
		}
		return acct{}
	}
	pre, post := find(d.Pre), find(d.Post)
	var out []slotChange
	for slot, after := range post.Storage {
		before := pre.Storage[slot]
		if before == "" {
			before = "0x" + strings.Repeat("0", 64)
		}
		if !strings.EqualFold(before, after) {
			out = append(out, slotChange{slot: strings.ToLower(slot), before: strings.ToLower(before), after: strings.ToLower(after)})
		}
	}
	// A slot the call cleared is in pre but not in post.
	for slot, before := range pre.Storage {
		if _, ok := post.Storage[slot]; !ok && strings.Trim(strings.TrimPrefix(before, "0x"), "0") != "" && len(post.Storage) > 0 {
			out = append(out, slotChange{slot: strings.ToLower(slot), before: strings.ToLower(before), after: "0x0"})
		}
	}
	slices.SortFunc(out, func(a, b slotChange) int { return strings.Compare(a.slot, b.slot) })
	return out
}

// topLevel reports whether a slot is a contract-wide state variable (a
// small slot number) rather than a mapping or array entry (a hash).
func topLevel(slot string) bool {
	h := strings.TrimLeft(strings.TrimPrefix(slot, "0x"), "0")
	return len(h) <= 16
}

// addressWord reports whether a slot value is a non-zero address alone
// (its upper 12 bytes zero): a role holder.
func addressWord(v string) bool {
	h := strings.TrimPrefix(v, "0x")
	if len(h) != 64 || strings.Trim(h[:24], "0") != "" {
		return false
	}
	return strings.Trim(h[24:], "0") != ""
}

// counterStep reports whether a slot moved by one (a counter or an array
// length), which public functions do too.
func counterStep(c slotChange) bool {
	a, ok1 := new(big.Int).SetString(strings.TrimPrefix(c.before, "0x"), 16)
	b, ok2 := new(big.Int).SetString(strings.TrimPrefix(c.after, "0x"), 16)
	if !ok1 || !ok2 {
		return false
	}
	return new(big.Int).Abs(new(big.Int).Sub(a, b)).Cmp(big.NewInt(1)) == 0
}

// report files a stranger's call that changed (or, without a trace, did
// not revert in) the registry.
func (s *surfSim) report(f surfFn, data []byte, ev evidence) {
	from := "0x" + hex.EncodeToString(s.from[:])
	named := f.fn.Signature != "" && privilegedName.MatchString(f.fn.Name())
	sev := fleet.SeverityMedium
	var what, why string
	switch {
	case len(ev.views) > 0:
		var parts, takeover []string
		for _, v := range replay.First(ev.views, 3) {
			parts = append(parts, fmt.Sprintf("%s returns %s instead of %s", v.reader, shortSlot(v.after), shortSlot(v.before)))
			if addressWord(v.before) && addressWord(v.after) && strings.HasSuffix(v.after, hex.EncodeToString(s.from[:])) {
				takeover = append(takeover, v.reader)
			}
		}
		what = "eth_simulateV1 shows it succeeds and changes what the registry's own functions answer (" + strings.Join(parts, "; ") + "); the node offers no debug_traceCall"
		switch {
		case len(takeover) > 0:
			sev, why = fleet.SeverityCritical, fmt.Sprintf("; %s named another address and then names the caller: a stranger takes over a role", strings.Join(takeover, ", "))
		case named:
			sev, why = fleet.SeverityCritical, "; its name says it is privileged"
		default:
			sev, why = fleet.SeverityHigh, "; contract-wide state a stranger should not set"
		}
	case ev.changed():
		var global, takeover []string
		for _, c := range ev.slots {
			if !topLevel(c.slot) {
				continue
			}
			if addressWord(c.before) && strings.HasSuffix(c.after, hex.EncodeToString(s.from[:])) && addressWord(c.after) {
				takeover = append(takeover, shortSlot(c.slot))
			} else if !counterStep(c) {
				global = append(global, shortSlot(c.slot))
			}
		}
		what = fmt.Sprintf("debug_traceCall (prestateTracer, diff mode) shows it changes %d storage slot(s) of the registry (%s)", len(ev.slots), describeSlots(ev.slots))
		switch {
		case len(takeover) > 0:
			sev, why = fleet.SeverityCritical, fmt.Sprintf("; contract-wide slot %s held another address and then holds the caller's: a stranger takes over a role", strings.Join(takeover, ", "))
		case len(global) > 0 && named:
			sev, why = fleet.SeverityCritical, fmt.Sprintf("; contract-wide slot %s changes and its name says it is privileged", strings.Join(global, ", "))
		case len(global) > 0:
			sev, why = fleet.SeverityHigh, fmt.Sprintf("; contract-wide slot %s changes, not a per-caller entry", strings.Join(global, ", "))
		case named:
			sev, why = fleet.SeverityHigh, "; only per-key entries or counters change, but its name says it is privileged"
		default:
			why = "; only per-key entries or counters change: check it is meant to be public"
		}
	case ev.method == "eth_simulateV1":
		what = fmt.Sprintf("eth_simulateV1 shows the call succeeds (gas used %d); the node offers no debug_traceCall, so the storage it changes was not observed", ev.gasUsed)
		if named {
			sev = fleet.SeverityHigh
		}
	default:
		what = "eth_call does not revert; the node offers neither debug_traceCall nor eth_simulateV1, so whether it changes storage was not observed"
		if named {
			sev = fleet.SeverityHigh
		}
	}
	args := "with no arguments"
	if len(data) > 4 {
		args = fmt.Sprintf("with calldata 0x%s", replay.Clip(hex.EncodeToString(data[4:]), 80))
	}
	summary := fmt.Sprintf("Registry function %s, found in the contract's bytecode and listed in no target.admin_functions, can be called by a fresh, unprivileged address: from %s %s, %s%s. Expected an ownership or role check that reverts for strangers.",
		f.label(), from, args, what, why)
	if !s.p.ReproFits(fleet.SurfaceRegistry, "qa_chain", ev.args) {
		s.p.File(sev, fleet.SurfaceRegistry, summary, "", nil)
		return
	}
	s.p.FileChecked(sev, fleet.SurfaceRegistry, summary, "qa_chain", ev.args, func(r fleet.Result) bool {
		if !r.IsOK() {
			return false
		}
		if len(ev.views) > 0 {
			return len(viewChanges(rpcResult(r), s.readers(f.sel))) > 0
		}
		again := s.parse(ev.method, ev.args, r)
		return again.changed() || ev.method != "debug_traceCall" && again.succeeded
	})
}

func shortSlot(slot string) string {
	h := strings.TrimLeft(strings.TrimPrefix(slot, "0x"), "0")
	if h == "" {
		h = "0"
	}
	if len(h) > 16 {
		return "0x" + h[:8] + "…"
	}
	return "0x" + h
}

func describeSlots(cs []slotChange) string {
	var parts []string
	for _, c := range replay.First(cs, 3) {
		parts = append(parts, shortSlot(c.slot)+": "+shortSlot(c.before)+" → "+shortSlot(c.after))
	}
	if len(cs) > 3 {
		parts = append(parts, fmt.Sprintf("%d more", len(cs)-3))
	}
	return strings.Join(parts, "; ")
}

// rpcResult is the JSON of a qa_chain read's "result": the node's answer
// as qatools passes it (raw JSON), or as a decoded value after a round
// trip through a run record.
func rpcResult(r fleet.Result) json.RawMessage {
	switch v := r["result"].(type) {
	case json.RawMessage:
		return v
	case []byte:
		return v
	case nil:
		return nil
	default:
		b, _ := json.Marshal(v)
		return b
	}
}
