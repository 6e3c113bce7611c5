package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// The fleet, inspectable on-chain (issue 24 item 7): the fleet identity
// publishes the running set of specialists as a record on the log (sev=meta
// kind=persona ref=<the set's hash>), one line per specialist with its
// tools, trigger, planner and the hash of its persona text (goal and
// prompt; the full text is in every run record's header), and the dial's
// rung. The daemon publishes it when the set differs from the newest one
// on the log: at start, when the node comes back, after a reload.
// `fleetd specialists` lists the set; with --on-chain it compares it with
// what the log holds.

// PersonaSource is the source= of the fleet's own set record.
const PersonaSource = "qa-fleet"

// MaxPersonaScan bounds how many of the log's newest entries are read to
// find the newest published set.
const MaxPersonaScan = 20_000

// SpecialistLine is one specialist as published.
type SpecialistLine struct {
	Name    string `json:"name"`
	Tools   string `json:"tools"`
	Trigger string `json:"trigger"`
	Planner string `json:"planner"`
	Persona string `json:"persona"` // sha256 of goal and prompt, 12 hex digits
}

func (l SpecialistLine) String() string {
	return fmt.Sprintf("%s tools=%s trigger=%s planner=%s persona=%s", l.Name, l.Tools, l.Trigger, l.Planner, l.Persona)
}

// SpecialistSet is the running set: its lines (by name) and the rung.
type SpecialistSet struct {
	Rung  string           `json:"rung"`
	Lines []SpecialistLine `json:"specialists"`
}

func NewSpecialistSet(ps []fleet.Persona, rung fleet.Dial) SpecialistSet {
	s := SpecialistSet{Rung: rung.String()}
	for _, p := range ps {
		h := sha256.Sum256([]byte(p.Goal + "\x00" + p.Prompt))
		tools := slices.Clone(p.Tools)
		slices.Sort(tools)
		planner := p.Planner
		if planner == "" {
			planner = fleet.PlannerPlaybook
		}
		s.Lines = append(s.Lines, SpecialistLine{Name: p.Name, Tools: orDash(strings.Join(tools, ",")), Trigger: p.Trigger.Token(),
			Planner: planner, Persona: hex.EncodeToString(h[:6])})
	}
	slices.SortFunc(s.Lines, func(a, b SpecialistLine) int { return strings.Compare(a.Name, b.Name) })
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Body is the record's summary: a first line, then one line per specialist.
func (s SpecialistSet) Body() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The fleet's specialists: %d at dial %s.", len(s.Lines), s.Rung)
	for _, l := range s.Lines {
		b.WriteString("\n" + l.String())
	}
	return b.String()
}

// Hash is the set's identity: the same set, the same hash, in any process.
func (s SpecialistSet) Hash() string {
	h := sha256.Sum256([]byte(s.Body()))
	return hex.EncodeToString(h[:8])
}

// Text is the record as posted.
func (s SpecialistSet) Text() (string, error) {
	return fleet.Format(fleet.Finding{Source: PersonaSource, Severity: fleet.SeverityMeta, Surface: fleet.SurfaceFleet,
		Kind: fleet.KindPersona, Ref: s.Hash(), Summary: s.Body()})
}

// ParseSpecialistSet reads a published record back; ok is false for any
// other entry.
func ParseSpecialistSet(text string) (set SpecialistSet, hash string, ok bool) {
	f, err := fleet.Parse(text)
	if err != nil || f.FreeForm || f.Kind != fleet.KindPersona || f.Source != PersonaSource {
		return set, "", false
	}
	lines := strings.Split(f.Summary, "\n")
	if _, err := fmt.Sscanf(lines[0], "The fleet's specialists: %d at dial %s", new(int), &set.Rung); err != nil {
		return set, "", false
	}
	set.Rung = strings.TrimSuffix(set.Rung, ".")
	for _, ln := range lines[1:] {
		fs := strings.Fields(ln)
		if len(fs) != 5 {
			return set, "", false
		}
		l := SpecialistLine{Name: fs[0]}
		for _, kv := range fs[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "tools":
				l.Tools = v
			case "trigger":
				l.Trigger = v
			case "planner":
				l.Planner = v
			case "persona":
				l.Persona = v
			}
		}
		set.Lines = append(set.Lines, l)
	}
	return set, f.Ref, true
}

// Published is the newest set the fleet identity published on the log.
type Published struct {
	Set   SpecialistSet
	Hash  string
	Index uint64
	Time  time.Time
}

// NewestPublished reads the log from its newest entry back (at most
// MaxPersonaScan entries) for the newest set record sent by fleetAddr; nil
// when there is none in that range.
func NewestPublished(ctx context.Context, log *chain.FeedbackLog, fleetAddr fleet.Address) (*Published, error) {
	n, err := log.Count(ctx)
	if err != nil {
		return nil, err
	}
	const page = 200
	for end := n; end > 0 && n-end < MaxPersonaScan; {
		start := end - min(end, page)
		es, err := log.Range(ctx, start, end-start)
		if err != nil {
			return nil, err
		}
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			if e.Sender != fleetAddr {
				continue
			}
			if set, hash, ok := ParseSpecialistSet(e.Text); ok {
				return &Published{Set: set, Hash: hash, Index: e.Index, Time: e.Time}, nil
			}
		}
		end = start
	}
	return nil, nil
}
