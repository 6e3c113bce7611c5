package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
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

// personaSource is the source= of the fleet's own set record.
const personaSource = "qa-fleet"

// maxPersonaScan bounds how many of the log's newest entries are read to
// find the newest published set.
const maxPersonaScan = 20_000

// specialistLine is one specialist as published.
type specialistLine struct {
	Name    string `json:"name"`
	Tools   string `json:"tools"`
	Trigger string `json:"trigger"`
	Planner string `json:"planner"`
	Persona string `json:"persona"` // sha256 of goal and prompt, 12 hex digits
}

func (l specialistLine) String() string {
	return fmt.Sprintf("%s tools=%s trigger=%s planner=%s persona=%s", l.Name, l.Tools, l.Trigger, l.Planner, l.Persona)
}

// specialistSet is the running set: its lines (by name) and the rung.
type specialistSet struct {
	Rung  string           `json:"rung"`
	Lines []specialistLine `json:"specialists"`
}

func newSpecialistSet(ps []fleet.Persona, rung fleet.Dial) specialistSet {
	s := specialistSet{Rung: rung.String()}
	for _, p := range ps {
		h := sha256.Sum256([]byte(p.Goal + "\x00" + p.Prompt))
		tools := slices.Clone(p.Tools)
		slices.Sort(tools)
		planner := p.Planner
		if planner == "" {
			planner = fleet.PlannerPlaybook
		}
		s.Lines = append(s.Lines, specialistLine{Name: p.Name, Tools: orDash(strings.Join(tools, ",")), Trigger: p.Trigger.Token(),
			Planner: planner, Persona: hex.EncodeToString(h[:6])})
	}
	slices.SortFunc(s.Lines, func(a, b specialistLine) int { return strings.Compare(a.Name, b.Name) })
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// body is the record's summary: a first line, then one line per specialist.
func (s specialistSet) body() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The fleet's specialists: %d at dial %s.", len(s.Lines), s.Rung)
	for _, l := range s.Lines {
		b.WriteString("\n" + l.String())
	}
	return b.String()
}

// hash is the set's identity: the same set, the same hash, in any process.
func (s specialistSet) hash() string {
	h := sha256.Sum256([]byte(s.body()))
	return hex.EncodeToString(h[:8])
}

// text is the record as posted.
func (s specialistSet) text() (string, error) {
	return fleet.Format(fleet.Finding{Source: personaSource, Severity: fleet.SeverityMeta, Surface: fleet.SurfaceFleet,
		Kind: fleet.KindPersona, Ref: s.hash(), Summary: s.body()})
}

// parseSpecialistSet reads a published record back; ok is false for any
// other entry.
func parseSpecialistSet(text string) (set specialistSet, hash string, ok bool) {
	f, err := fleet.Parse(text)
	if err != nil || f.FreeForm || f.Kind != fleet.KindPersona || f.Source != personaSource {
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
		l := specialistLine{Name: fs[0]}
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

// published is the newest set the fleet identity published on the log.
type published struct {
	Set   specialistSet
	Hash  string
	Index uint64
	Time  time.Time
}

// newestPublished reads the log from its newest entry back (at most
// maxPersonaScan entries) for the newest set record sent by fleetAddr; nil
// when there is none in that range.
func newestPublished(ctx context.Context, log *chain.FeedbackLog, fleetAddr fleet.Address) (*published, error) {
	n, err := log.Count(ctx)
	if err != nil {
		return nil, err
	}
	const page = 200
	for end := n; end > 0 && n-end < maxPersonaScan; {
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
			if set, hash, ok := parseSpecialistSet(e.Text); ok {
				return &published{Set: set, Hash: hash, Index: e.Index, Time: e.Time}, nil
			}
		}
		end = start
	}
	return nil, nil
}

// publishSpecialists posts the running set when it differs from the newest
// one on the log (a no-op without a log, a fleet key or a poster). Errors
// are logged: publishing never stops the daemon.
func (d *daemon) publishSpecialists(ctx context.Context) {
	env := d.env
	if env == nil || env.Log == nil || env.FleetKey == nil || env.Poster == nil || d.snap.Load().personas == nil {
		return // not the daemon (fleetd mcp recovers crashed runs with it too), or no log to publish on
	}
	ps := d.personaList()
	rung, _ := env.Control.Dial()
	set := newSpecialistSet(ps, rung)
	st := &console.PublishedSet{Set: set.hash(), Checked: time.Now()}
	defer d.published.Store(st)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pub, err := newestPublished(cctx, env.Log, env.FleetKey.Address())
	if err != nil {
		st.Error = "the log could not be read: " + err.Error()
		d.log.Warn("specialists not published: the log could not be read", "err", err)
		return
	}
	if pub != nil && pub.Hash == set.hash() {
		st.Matches, st.Entry, st.Time = true, pub.Index, pub.Time
		d.publishNameOf(cctx, st)
		return
	}
	text, err := set.text()
	if err == nil {
		var res poster.Result
		if res, err = env.Poster.Post(cctx, poster.Record{Text: text, Source: personaSource, Keying: poster.ByText}); err == nil {
			d.log.Info("published the fleet's specialists", "set", set.hash(), "specialists", len(set.Lines), "status", string(res.Status))
			if res.Status == poster.Posted {
				st.Matches, st.Time = true, time.Now()
				if res.Entry != nil {
					st.Entry = res.Entry.Index
					d.publishNameOf(cctx, st)
				}
			} else {
				st.Error = "the record is " + string(res.Status)
			}
			return
		}
	}
	st.Error = err.Error()
	d.log.Error("specialists not published", "err", err)
}

// publishNameOf writes the set st says is on the log into the fleet's
// name (chain.fleet_name), when one is configured, and notes the outcome
// in st.
func (d *daemon) publishNameOf(ctx context.Context, st *console.PublishedSet) {
	name := d.a().cfg.Chain.FleetName
	if name == "" {
		return
	}
	st.Name = name
	ok, err := d.publishName(ctx, name, nameRecord{Set: st.Set, Log: d.env.Log.Address().String(), Entry: st.Entry})
	st.NameMatches = ok
	if err != nil {
		st.NameError = err.Error()
		d.log.Warn("the fleet's name does not hold the specialist set", "name", name, "err", err)
	}
}

// personaList is the running personas, by name.
func (d *daemon) personaList() []fleet.Persona {
	m := d.snap.Load().personas
	out := make([]fleet.Persona, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b fleet.Persona) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// onChain prints (or adds to out, for --json) how the running set compares
// with the newest one the fleet identity published; it returns an
// exitError (1) when they differ or none is published.
func (a probeCommands) onChain(ctx context.Context, set specialistSet, asJSON bool) error {
	env, err := a.buildEnv(ctx, a.warnLogger())
	if err != nil {
		if errors.Is(err, chain.ErrUnreachable) {
			return &exitError{code: exitInfra, err: err}
		}
		return &exitError{code: exitConfig, err: err}
	}
	defer env.Close()
	if env.Log == nil || env.FleetKey == nil {
		return &exitError{code: exitConfig, err: errors.New("--on-chain needs chain.feedback_log and chain.fleet_key_file")}
	}
	pub, err := newestPublished(ctx, env.Log, env.FleetKey.Address())
	if err != nil {
		return &exitError{code: exitInfra, err: fmt.Errorf("reading the log: %w", err)}
	}
	matches := pub != nil && pub.Hash == set.hash()
	// The fleet's name, when configured, must hold the same set and point
	// at the same record.
	var name *nameView
	nameMatches := true
	if n := a.cfg.Chain.FleetName; n != "" {
		if env.Registry == nil {
			return &exitError{code: exitConfig, err: errors.New("chain.fleet_name needs target.registry")}
		}
		v, err := readFleetName(ctx, env.Registry, n)
		if err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("reading the fleet's name: %w", err)}
		}
		name = &v
		nameMatches = pub != nil && v.matches(env.FleetKey.Address(), nameRecord{Set: set.hash(), Log: env.Log.Address().String(), Entry: pub.Index})
	}
	var want *nameRecord
	if pub != nil {
		want = &nameRecord{Set: set.hash(), Log: env.Log.Address().String(), Entry: pub.Index}
	}
	if asJSON {
		out := map[string]any{"set": set.hash(), "rung": set.Rung, "specialists": set.Lines, "published": pub != nil, "matches": matches && nameMatches}
		if pub != nil {
			out["on_chain"] = map[string]any{"set": pub.Hash, "entry": pub.Index, "time": pub.Time, "rung": pub.Set.Rung, "specialists": pub.Set.Lines}
		}
		if name != nil {
			nm := map[string]any{"name": name.Name, "owner": name.Owner, "matches": nameMatches}
			if name.Rec != nil {
				nm["set"], nm["log"], nm["entry"] = name.Rec.Set, name.Rec.Log, name.Rec.Entry
			} else {
				nm["error"] = name.Err
			}
			out["name"] = nm
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "running set %s (%d specialists, dial %s)\n%s\n", set.hash(), len(set.Lines), set.Rung, onChainText(set, pub))
		if name != nil {
			fmt.Fprintln(a.stdout, nameText(*name, env.FleetKey.Address(), want))
		}
	}
	if !matches {
		return &exitError{code: exitInfra, err: errors.New("the running specialists are not the ones published on the log")}
	}
	if !nameMatches {
		return &exitError{code: exitInfra, err: fmt.Errorf("the fleet's name %q does not hold the set published on the log", name.Name)}
	}
	return nil
}

// onChainText says how the running set compares with the published one.
func onChainText(set specialistSet, pub *published) string {
	if pub == nil {
		return fmt.Sprintf("on chain: no set published by the fleet identity in the log's newest %d entries (the daemon publishes it at start)", maxPersonaScan)
	}
	if pub.Hash == set.hash() {
		return fmt.Sprintf("on chain: matches (entry %d, %s)", pub.Index, pub.Time.UTC().Format(time.RFC3339))
	}
	var diff []string
	have := map[string]specialistLine{}
	for _, l := range pub.Set.Lines {
		have[l.Name] = l
	}
	for _, l := range set.Lines {
		p, ok := have[l.Name]
		switch {
		case !ok:
			diff = append(diff, "  running, not published: "+l.Name)
		case p != l:
			diff = append(diff, fmt.Sprintf("  differs: %s (published: %s)", l, p))
		}
		delete(have, l.Name)
	}
	for name := range have {
		diff = append(diff, "  published, not running: "+name)
	}
	slices.Sort(diff)
	if pub.Set.Rung != set.Rung {
		diff = append(diff, fmt.Sprintf("  dial: %s running, %s published", set.Rung, pub.Set.Rung))
	}
	return fmt.Sprintf("on chain: DIFFERS from entry %d (%s):\n%s", pub.Index, pub.Time.UTC().Format(time.RFC3339), strings.Join(diff, "\n"))
}
