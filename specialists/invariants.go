package specialists

import (
	"bytes"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Property is one invariant of the registry as data (invariants/*.yaml,
// embedded; more through Options.Properties): a sequence of calls by
// throwaway actors and what each must do. It is checked by simulating the
// whole sequence in one eth_simulateV1 request, state carried from call to
// call and nothing written.
type Property struct {
	Name     string `yaml:"property"`
	Version  int    `yaml:"version"`
	Claim    string `yaml:"claim"`
	Severity string `yaml:"severity"`
	Steps    []Step `yaml:"steps"`
	file     string
}

// Step is one call of a property and its expectation.
type Step struct {
	As         string   `yaml:"as"`   // an actor: alice, bob or carol
	Call       string   `yaml:"call"` // a canonical signature
	Args       []string `yaml:"args"` // argument texts (evm.EncodeArgs), placeholders filled
	Expect     string   `yaml:"expect"`
	Address    string   `yaml:"address"`     // the returned word is this address
	NotAddress string   `yaml:"not_address"` // the returned word is not this address
	Bytes      *string  `yaml:"bytes"`       // the returned bytes or string are this text
	Word       string   `yaml:"word"`        // the returned word is this decimal number
	NotWord    string   `yaml:"not_word"`    // the returned word is not this number
}

// Actors of a property; PropertyPlaceholders their addresses, the fresh
// name and the zero address.
var (
	Actors               = []string{"alice", "bob", "carol"}
	PropertyPlaceholders = []string{"{name}", "{alice}", "{bob}", "{carol}", "{zero}"}
	propertyName         = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	propertyPlaceholder  = regexp.MustCompile(`\{[a-z_]+\}`)
)

// Property limits.
const (
	maxPropertyBytes = 32 << 10
	maxPropertySteps = 16
	secProperties    = 8 // properties checked per run
)

// ParseProperty decodes and validates one property file, strictly
// (unknown keys are errors); the error names the file and the field.
func ParseProperty(file string, data []byte) (Property, error) {
	var pr Property
	if len(data) > maxPropertyBytes {
		return pr, fmt.Errorf("%s: %d bytes, at most %d", file, len(data), maxPropertyBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&pr); err != nil {
		return Property{}, fmt.Errorf("%s: %w", file, err)
	}
	pr.file = file
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %s", file, field, fmt.Sprintf(format, args...)))
	}
	if !propertyName.MatchString(pr.Name) {
		bad("property", "%q: want lowercase letters, digits and dashes", pr.Name)
	}
	if pr.Version < 1 {
		bad("version", "want 1 or more, got %d", pr.Version)
	}
	if strings.TrimSpace(pr.Claim) == "" {
		bad("claim", "required")
	}
	if sev, err := fleet.ParseSeverity(pr.Severity); err != nil || sev.Rank() < fleet.SeverityLow.Rank() || pr.Severity == "meta" {
		bad("severity", "%q: want critical, high, medium or low", pr.Severity)
	}
	if len(pr.Steps) == 0 || len(pr.Steps) > maxPropertySteps {
		bad("steps", "%d steps: want 1 to %d", len(pr.Steps), maxPropertySteps)
	}
	sample := propertyVars{name: "qa-sample"}
	for i, st := range pr.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		if !slices.Contains(Actors, st.As) {
			bad(field+".as", "%q: want one of %s", st.As, strings.Join(Actors, ", "))
		}
		for _, s := range append(slices.Clone(st.Args), st.Address, st.NotAddress, st.Word, st.NotWord) {
			for _, ph := range propertyPlaceholder.FindAllString(s, -1) {
				if !slices.Contains(PropertyPlaceholders, ph) {
					bad(field, "unknown placeholder %s (have %s)", ph, strings.Join(PropertyPlaceholders, " "))
				}
			}
		}
		if _, err := evm.EncodeArgs(st.Call, sample.fill(st.Args)); err != nil {
			bad(field+".call", "%v", err)
		}
		switch st.Expect {
		case "success", "revert", "any":
		default:
			bad(field+".expect", "%q: want success, revert or any", st.Expect)
		}
		checks := 0
		for _, c := range []bool{st.Address != "", st.NotAddress != "", st.Bytes != nil, st.Word != "", st.NotWord != ""} {
			if c {
				checks++
			}
		}
		if checks > 1 {
			bad(field, "at most one of address, not_address, bytes, word, not_word")
		}
		if checks == 1 && st.Expect != "success" {
			bad(field+".expect", "a check of the returned value needs expect: success")
		}
		for _, w := range []string{st.Word, st.NotWord} {
			if w != "" {
				if _, ok := new(big.Int).SetString(w, 10); !ok {
					bad(field, "word %q: want a decimal number", w)
				}
			}
		}
	}
	return pr, errors.Join(errs...)
}

// LoadProperties parses every *.yaml file directly in dir of fsys, sorted
// by name; two properties may not share a name. The error names each bad
// file.
func LoadProperties(fsys fs.FS, dir string) ([]Property, error) {
	return replay.LoadDir(fsys, dir, "property", "properties", ParseProperty, func(v Property) string { return v.Name })
}

//go:embed invariants/*.yaml
var propertyFS embed.FS

// DefaultProperties returns the embedded properties (invariants/*.yaml).
// They are validated by the package's tests; an error here is a build bug.
var DefaultProperties = sync.OnceValues(func() ([]Property, error) { return LoadProperties(propertyFS, "invariants") })

// propertyVars fill a property's placeholders.
type propertyVars struct {
	name   string
	actors map[string][20]byte
}

func (v propertyVars) addr(actor string) string {
	a := v.actors[actor]
	return "0x" + hex.EncodeToString(a[:])
}

func (v propertyVars) expand(s string) string {
	return strings.NewReplacer("{name}", v.name, "{alice}", v.addr("alice"), "{bob}", v.addr("bob"),
		"{carol}", v.addr("carol"), "{zero}", "0x0000000000000000000000000000000000000000").Replace(s)
}

func (v propertyVars) fill(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = v.expand(a)
	}
	return out
}

// secInvariants checks the properties against the registry: each whose
// functions are all in the registry's dispatcher is simulated as one
// sequence (eth_simulateV1), and the first step that does not do what it
// must is a finding. Without eth_simulateV1 nothing is checked, and the
// run says so: eth_call cannot carry state from one call to the next.
func secInvariants(p *replay.Play, props []Property, fns []surfFn) {
	reg := p.Target().Registry
	switch {
	case reg == "" || fns == nil:
		p.Skip("the registry's surface was not read: invariants over call sequences not checked")
		return
	case len(props) == 0:
		return
	}
	sels := make([][4]byte, len(fns))
	for i, f := range fns {
		sels[i] = f.sel
	}
	vars := propertyVars{name: fmt.Sprintf("qa-inv-%06x", uint32(p.TargetSeed()>>40)), actors: map[string][20]byte{}}
	for _, a := range Actors {
		h := evm.Keccak256([]byte(fmt.Sprintf("fleetd actor %s %x", a, p.TargetSeed())))
		vars.actors[a] = [20]byte(h[12:])
	}
	checked, skipped := 0, 0
	for _, pr := range props {
		if checked == secProperties {
			break
		}
		if slices.ContainsFunc(pr.Steps, func(s Step) bool { return !slices.Contains(sels, evm.Selector(s.Call)) }) {
			skipped++
			continue
		}
		if !p.Room(2) {
			return
		}
		checked++
		args := invariantCall(pr, vars, reg)
		r := p.Call("qa_chain", args)
		if !r.IsOK() {
			if unavailable(r.Err()) {
				p.Skip("eth_simulateV1 is not available (%s): invariants over call sequences not checked (eth_call cannot carry state from one call to the next)", replay.Clip(r.Err(), 80))
				return
			}
			p.Notef("property %s: the simulation failed (%s)", pr.Name, replay.Clip(r.Err(), 100))
			continue
		}
		step, why := violation(pr, vars, rpcResult(r))
		if step < 0 {
			continue
		}
		reportViolation(p, pr, vars, args, step, why)
	}
	p.Notef("invariants: %d properties checked by simulated call sequences, %d not applicable (a function they use is not in the registry)", checked, skipped)
}

// invariantCall is the qa_chain call simulating pr's steps in one block.
func invariantCall(pr Property, v propertyVars, reg string) map[string]any {
	calls := make([]any, len(pr.Steps))
	for i, st := range pr.Steps {
		data, _ := evm.EncodeArgs(st.Call, v.fill(st.Args)) // validated by ParseProperty
		calls[i] = map[string]any{"from": v.addr(st.As), "to": strings.ToLower(reg), "data": "0x" + hex.EncodeToString(data)}
	}
	return map[string]any{"method": "eth_simulateV1", "params": []any{
		map[string]any{"blockStateCalls": []any{map[string]any{"calls": calls}}, "validation": false}, "latest"}}
}

// violation returns the index of the first step whose result breaks pr, and
// why; -1 when every step does what it must (or the answer is unreadable).
func violation(pr Property, v propertyVars, raw json.RawMessage) (int, string) {
	var blocks []struct {
		Calls []struct {
			Status     string `json:"status"`
			ReturnData string `json:"returnData"`
		} `json:"calls"`
	}
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 || len(blocks[0].Calls) != len(pr.Steps) {
		return -1, ""
	}
	for i, st := range pr.Steps {
		c := blocks[0].Calls[i]
		ok := c.Status == "0x1"
		switch {
		case st.Expect == "success" && !ok:
			return i, "it reverts"
		case st.Expect == "revert" && ok:
			return i, "it succeeds"
		case !ok:
			continue
		}
		ret, _ := hex.DecodeString(strings.TrimPrefix(c.ReturnData, "0x"))
		var w []byte
		if len(ret) >= 32 {
			w = ret[:32]
		}
		asAddr := func() string {
			if w == nil {
				return ""
			}
			return "0x" + hex.EncodeToString(w[12:])
		}
		switch {
		case st.Address != "" && !strings.EqualFold(asAddr(), v.expand(st.Address)):
			return i, "it returns " + orNothing(asAddr()) + ", not " + v.expand(st.Address)
		case st.NotAddress != "" && strings.EqualFold(asAddr(), v.expand(st.NotAddress)):
			return i, "it returns " + asAddr()
		case st.Bytes != nil:
			b, err := evm.ReturnedBytes(ret)
			if err != nil || string(b) != *st.Bytes {
				return i, fmt.Sprintf("it returns %s, not %q", replay.Quote(string(b), 40), *st.Bytes)
			}
		case st.Word != "" || st.NotWord != "":
			got := new(big.Int).SetBytes(w)
			if want, _ := new(big.Int).SetString(st.Word, 10); st.Word != "" && (w == nil || got.Cmp(want) != 0) {
				return i, "it returns " + got.String() + ", not " + st.Word
			}
			if not, _ := new(big.Int).SetString(st.NotWord, 10); st.NotWord != "" && w != nil && got.Cmp(not) == 0 {
				return i, "it returns " + got.String()
			}
		}
	}
	return -1, ""
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// reportViolation files a broken property, its steps up to the one that
// broke it.
func reportViolation(p *replay.Play, pr Property, v propertyVars, args map[string]any, step int, why string) {
	var steps []string
	for i, st := range pr.Steps[:step+1] {
		a := make([]string, len(st.Args))
		for j, x := range v.fill(st.Args) {
			a[j] = replay.Quote(x, 24)
		}
		steps = append(steps, fmt.Sprintf("%d. %s %s(%s)", i+1, st.As, evm.Function{Signature: st.Call}.Name(), strings.Join(a, ", ")))
	}
	st := pr.Steps[step]
	expected := st.Expect
	if expected == "success" && (st.Address != "" || st.Bytes != nil || st.Word != "") {
		expected = "success with the expected value"
	}
	summary := fmt.Sprintf("Registry invariant broken: %s (property %s). Simulated with eth_simulateV1 from throwaway actors, nothing written: %s; at step %d %s, where the property expects %s.",
		pr.Claim, pr.Name, strings.Join(steps, "; "), step+1, why, expected)
	sev, _ := fleet.ParseSeverity(pr.Severity)
	if !p.ReproFits(fleet.SurfaceRegistry, "qa_chain", args) {
		// Too long for a repro in a feedback entry: the replay the quality
		// bar asks for is the same simulation once more, now.
		summary += " (The sequence is too long for a repro: simulate the steps above with eth_simulateV1.)"
		if sev.Rank() < fleet.SeverityHigh.Rank() {
			p.File(sev, fleet.SurfaceRegistry, summary, "", nil)
			return
		}
		if !p.Room(1) {
			p.File(fleet.SeverityMedium, fleet.SurfaceRegistry, summary+" (Not confirmed by a replay: no call left for it.)", "", nil)
			return
		}
		r := p.Call("qa_chain", args)
		if again, _ := violation(pr, v, rpcResult(r)); r.IsOK() && again == step {
			p.File(sev, fleet.SurfaceRegistry, summary, "", nil)
		} else {
			p.File(fleet.SeverityLow, fleet.SurfaceRegistry, summary+" Simulating it again did not show it: flaky, filed at low.", "", nil, replay.StateArgs{Flaky: true})
		}
		return
	}
	p.FileChecked(sev, fleet.SurfaceRegistry, summary, "qa_chain", args, func(r fleet.Result) bool {
		again, _ := violation(pr, v, rpcResult(r))
		return r.IsOK() && again == step
	})
}
