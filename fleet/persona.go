package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Persona is a specialist, as data (configs/personas/<name>.yaml): who it is,
// what it may use, when it runs and what drives it. Adding a specialist is a
// new file, no code.
type Persona struct {
	Name string `yaml:"name" json:"name"`
	// Source is the reporting source on its findings; default "qa-<name>".
	Source string `yaml:"source" json:"source,omitempty"`
	Goal   string `yaml:"goal" json:"goal"`
	// Prompt is the persona prompt: the system instruction of model planners.
	Prompt string   `yaml:"prompt" json:"prompt"`
	Tools  []string `yaml:"tools" json:"tools"`
	// Planner is playbook, gemini or openai.
	Planner string `yaml:"planner" json:"planner"`
	// Playbook names the deterministic playbook a playbook planner runs;
	// default: the persona's name.
	Playbook string  `yaml:"playbook" json:"playbook,omitempty"`
	Trigger  Trigger `yaml:"trigger" json:"trigger"`
	Budget   Budget  `yaml:"budget" json:"budget,omitzero"`
}

// Trigger says when a specialist runs. Exactly one of Cron, Every,
// Continuous may be set; Events adds chain-event triggers to any of them
// (or stands alone).
type Trigger struct {
	Cron       string        `yaml:"cron" json:"cron,omitempty"`   // robfig/cron spec, seconds optional, or @hourly/@every 30s
	Every      time.Duration `yaml:"every" json:"every,omitempty"` // a fixed interval
	Continuous bool          `yaml:"continuous" json:"continuous,omitempty"`
	// Events: code_changed (new code at the target's registry address),
	// name_registered, feedback (a new feedback log entry).
	Events []string `yaml:"events" json:"events,omitempty"`
}

// String says how the trigger fires, for people (the console's Fleet page,
// `fleetd specialists`): "cron <spec>", "every <duration>" or "continuous",
// then "on <event>, <event>" for the events, joined with "; "; "manual
// only" when nothing fires it.
func (t Trigger) String() string {
	var parts []string
	switch {
	case t.Cron != "":
		parts = append(parts, "cron "+t.Cron)
	case t.Every > 0:
		parts = append(parts, "every "+t.Every.String())
	case t.Continuous:
		parts = append(parts, "continuous")
	}
	if len(t.Events) > 0 {
		parts = append(parts, "on "+strings.Join(t.Events, ", "))
	}
	if len(parts) == 0 {
		return "manual only"
	}
	return strings.Join(parts, "; ")
}

// Token is the trigger as one token without spaces, for the set of
// specialists the fleet publishes on the log (one line per specialist,
// compared as text): cron:<spec with _ for spaces>, every:<duration>,
// continuous or none, then +events:<a>,<b> with the events sorted.
func (t Trigger) Token() string {
	var s string
	switch {
	case t.Cron != "":
		s = "cron:" + strings.ReplaceAll(strings.TrimSpace(t.Cron), " ", "_")
	case t.Every > 0:
		s = "every:" + t.Every.String()
	case t.Continuous:
		s = "continuous"
	default:
		s = "none"
	}
	if len(t.Events) > 0 {
		ev := slices.Clone(t.Events)
		slices.Sort(ev)
		s += "+events:" + strings.Join(ev, ",")
	}
	return s
}

// Planner names.
const (
	PlannerPlaybook = "playbook"
	PlannerGemini   = "gemini"
	PlannerOpenAI   = "openai"
)

// Event trigger names.
var EventNames = []string{"code_changed", "name_registered", "feedback"}

var personaName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)

// ReportingSource returns the source a persona's findings carry.
func (p Persona) ReportingSource() string {
	if p.Source != "" {
		return p.Source
	}
	return "qa-" + p.Name
}

// PlaybookName returns the playbook a playbook planner runs.
func (p Persona) PlaybookName() string {
	if p.Playbook != "" {
		return p.Playbook
	}
	return p.Name
}

// Validate checks what fleet can check alone; the loader adds the checks
// that need the tool registry, the playbooks and the cron parser. Errors name
// the field.
func (p Persona) Validate() error {
	var errs []error
	if !personaName.MatchString(p.Name) {
		errs = append(errs, fmt.Errorf("name: %q must be lowercase letters, digits and dashes, starting with a letter", p.Name))
	}
	if p.Source != "" {
		if _, err := Parse("qa/v1 source=" + p.Source + " sev=info surface=fleet\nx"); err != nil {
			errs = append(errs, fmt.Errorf("source: %q is not a valid qa/v1 source token", p.Source))
		}
	}
	if p.Goal == "" {
		errs = append(errs, errors.New("goal: required"))
	}
	if len(p.Tools) == 0 {
		errs = append(errs, errors.New("tools: at least one tool"))
	}
	for i, t := range p.Tools {
		if slices.Index(p.Tools, t) != i {
			errs = append(errs, fmt.Errorf("tools[%d]: %q listed twice", i, t))
		}
	}
	switch p.Planner {
	case PlannerPlaybook, PlannerGemini, PlannerOpenAI:
	default:
		errs = append(errs, fmt.Errorf("planner: %q is not one of playbook, gemini, openai", p.Planner))
	}
	if p.Planner != PlannerPlaybook && p.Prompt == "" {
		errs = append(errs, fmt.Errorf("prompt: required for planner %s", p.Planner))
	}
	set := 0
	if p.Trigger.Cron != "" {
		set++
	}
	if p.Trigger.Every != 0 {
		set++
	}
	if p.Trigger.Continuous {
		set++
	}
	if set > 1 {
		errs = append(errs, errors.New("trigger: set only one of cron, every, continuous"))
	}
	if p.Trigger.Every < 0 || (p.Trigger.Every > 0 && p.Trigger.Every < time.Second) {
		errs = append(errs, fmt.Errorf("trigger.every: %s is below one second", p.Trigger.Every))
	}
	for i, e := range p.Trigger.Events {
		if !slices.Contains(EventNames, e) {
			errs = append(errs, fmt.Errorf("trigger.events[%d]: %q is not one of %v", i, e, EventNames))
		}
	}
	if err := p.Budget.Validate("budget"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
