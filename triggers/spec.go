package triggers

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser accepts 5-field specs, 6-field specs with seconds first, and
// descriptors (@hourly, @daily, @every 30s, ...).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron spec, returning an error that quotes it.
func ParseCron(spec string) (cron.Schedule, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("cron spec %q: %w", spec, err)
	}
	return s, nil
}

// Event kinds a Spec may list.
const (
	EventCodeChanged    = "code_changed"    // new code at Config.Registry
	EventNameRegistered = "name_registered" // a Registered log of Config.Registry
	EventFeedback       = "feedback"        // a FeedbackSubmitted log of Config.FeedbackLog
)

// eventKinds lists the kinds in the order the poller processes them.
var eventKinds = []string{EventCodeChanged, EventNameRegistered, EventFeedback}

// Spec says when one specialist runs; it mirrors fleet.Persona.Trigger. At
// most one of Cron, Every and Continuous may be set; Events add chain-event
// triggers to any of them. A Spec with none of them only runs when fired by
// hand ([Scheduler.Fire]).
type Spec struct {
	Specialist string
	// Cron is a robfig/cron spec: 5 fields, 6 with seconds first, or a
	// descriptor (@hourly, @every 30s).
	Cron string
	// Every is a fixed interval of at least a second.
	Every time.Duration
	// Continuous runs again as soon as the last run ended and the backoff
	// delay passed (see the package doc).
	Continuous bool
	// Events are chain events: code_changed, name_registered, feedback.
	Events []string
}

// equal reports whether a and b schedule identically.
func (s Spec) equal(o Spec) bool {
	return s.Specialist == o.Specialist && s.Cron == o.Cron && s.Every == o.Every &&
		s.Continuous == o.Continuous && slices.Equal(s.Events, o.Events)
}

// compiled is a validated spec with its schedule (nil for continuous,
// event-only and manual specs).
type compiled struct {
	Spec
	sched cron.Schedule
	since time.Time // when it was scheduled (Start, or the Replace that changed it), for starvation
}

// validateSpecs checks every spec against cfg (the watched addresses and the
// event source) and compiles the schedules. Errors name the specialist and
// the offending field; all of them are joined.
func validateSpecs(specs []Spec, cfg *Config) (map[string]compiled, error) {
	out := make(map[string]compiled, len(specs))
	var errs []error
	for i, sp := range specs {
		name := sp.Specialist
		if name == "" {
			errs = append(errs, fmt.Errorf("specs[%d]: specialist name is empty", i))
			continue
		}
		if _, dup := out[name]; dup {
			errs = append(errs, fmt.Errorf("specialist %s: listed twice", name))
			continue
		}
		c := compiled{Spec: sp}
		c.Events = slices.Clone(sp.Events)
		set := 0
		if sp.Cron != "" {
			set++
			s, err := ParseCron(sp.Cron)
			if err != nil {
				errs = append(errs, fmt.Errorf("specialist %s: %w", name, err))
			}
			c.sched = s
		}
		if sp.Every != 0 {
			set++
			if sp.Every < time.Second {
				errs = append(errs, fmt.Errorf("specialist %s: every %s is below one second", name, sp.Every))
			}
			c.sched = &everySchedule{d: sp.Every}
		}
		if sp.Continuous {
			set++
		}
		if set > 1 {
			errs = append(errs, fmt.Errorf("specialist %s: set only one of cron, every, continuous", name))
		}
		for j, e := range sp.Events {
			if !slices.Contains(eventKinds, e) {
				errs = append(errs, fmt.Errorf("specialist %s: events[%d]: unknown event %q (want one of %v)", name, j, e, eventKinds))
				continue
			}
			if slices.Index(sp.Events, e) != j {
				errs = append(errs, fmt.Errorf("specialist %s: events[%d]: %q listed twice", name, j, e))
				continue
			}
			if cfg.Events == nil {
				errs = append(errs, fmt.Errorf("specialist %s: event %s: %w", name, e, ErrNoEventSource))
				continue
			}
			if a := cfg.watched(e); a.IsZero() {
				errs = append(errs, fmt.Errorf("specialist %s: event %s: %w", name, e, ErrNoAddress))
			}
		}
		out[name] = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// everySchedule ticks every d on a grid starting at the first time cron asks
// for it (when the scheduler starts, or when the entry is added to a running
// one). A late wake-up skips the missed ticks instead of firing them in a
// burst, and the ticks never drift. Only cron's run goroutine calls Next.
type everySchedule struct {
	d     time.Duration
	epoch time.Time
}

// Next returns the first grid point strictly after t.
func (e *everySchedule) Next(t time.Time) time.Time {
	if e.epoch.IsZero() {
		e.epoch = t
	}
	if t.Before(e.epoch) {
		return e.epoch.Add(e.d)
	}
	k := t.Sub(e.epoch)/e.d + 1
	return e.epoch.Add(k * e.d)
}
