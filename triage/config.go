package triage

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Config is what the engine and the Triage service need. The zero Config is
// usable: nobody is trusted, default weights, meta summaries at most hourly.
// cmd/fleetd owns decoding (STYLE.md 19); the yaml tags let it embed Weights.
type Config struct {
	// Trusted lists the senders whose findings count and may reach the fix
	// stage, and whose corrections apply (chain.trusted_senders). cmd should
	// include the fleet identity that `fleetd findings mark` signs with,
	// or operator corrections are ignored like anyone else's.
	Trusted []fleet.Address `yaml:"trusted" json:"trusted"`
	// Weights are the ranking weights; zero fields take their defaults.
	Weights Weights `yaml:"weights" json:"weights"`
	// MergeThreshold is the weighted-Jaccard similarity at or above which a
	// new finding without a matching repro joins an existing cluster of its
	// surface. 0 means DefaultMergeThreshold; above 1 disables fuzzy merging.
	MergeThreshold float64 `yaml:"merge_threshold" json:"merge_threshold"`
	// MetaEvery is the least time between two meta summaries posted to the
	// log. 0 means DefaultMetaEvery.
	MetaEvery time.Duration `yaml:"meta_every" json:"meta_every"`
	// Top is how many clusters the Markdown report and the table show.
	// 0 means DefaultTop. The JSON report always holds every cluster.
	Top int `yaml:"top" json:"top"`
	// History is how many dated reports reports/history keeps. 0 means
	// DefaultHistory.
	History int `yaml:"history" json:"history"`
}

// Defaults for Config.
const (
	DefaultMergeThreshold = 0.55
	DefaultMetaEvery      = time.Hour
	DefaultTop            = 25
	DefaultHistory        = 500
)

// Weights are the ranking weights (see the package comment for the formula).
// A severity or surface missing from its map, and a zero scalar, take the
// default; DefaultWeights documents them.
type Weights struct {
	// Severity maps a severity to its weight. Meta entries are never ranked.
	Severity map[fleet.Severity]float64 `yaml:"severity" json:"severity"`
	// Surface maps a surface to its criticality.
	Surface map[fleet.Surface]float64 `yaml:"surface" json:"surface"`
	// SurfaceDefault is the criticality of a surface not in Surface.
	SurfaceDefault float64 `yaml:"surface_default" json:"surface_default"`
	// SourceDamping multiplies ln(distinct sources) in the recurrence.
	SourceDamping float64 `yaml:"source_damping" json:"source_damping"`
	// RunDamping multiplies ln(distinct runs) in the recurrence.
	RunDamping float64 `yaml:"run_damping" json:"run_damping"`
	// RunCap caps the distinct runs counted, so that a probe stuck in a loop
	// across many runs stops gaining rank. 1 switches the run term off.
	RunCap int `yaml:"run_cap" json:"run_cap"`
	// RegressionBoost multiplies the score of a regressed cluster.
	RegressionBoost float64 `yaml:"regression_boost" json:"regression_boost"`
	// Untrusted multiplies the score of a cluster no trusted sender reported.
	Untrusted float64 `yaml:"untrusted" json:"untrusted"`
}

// DefaultWeights returns the documented defaults:
//
//	severity: critical 16, high 8, medium 4, low 2, info 1, unknown 1
//	surface:  security 3, chain 3, registry 2.5, compiler 2, call 1.5,
//	          face 1.5, feedback 1.2, docs 1, perf 0.8, fleet 0.5; others 1
//	recurrence: 1 + 1·ln(sources) + 0.5·ln(min(runs, 100))
//	regression boost 1.5, untrusted-only clusters ×0.1
//
// Severity doubles per step so that a one-off finding is outranked by one a
// level less severe only when that one recurs across several sources and
// runs; surfaces follow DESIGN.md: security and on-chain correctness, then
// the registry, the compiler, the call and face endpoints, docs, and perf.
func DefaultWeights() Weights {
	return Weights{
		Severity: map[fleet.Severity]float64{
			fleet.SeverityCritical: 16,
			fleet.SeverityHigh:     8,
			fleet.SeverityMedium:   4,
			fleet.SeverityLow:      2,
			fleet.SeverityInfo:     1,
			fleet.SeverityUnknown:  1,
		},
		Surface: map[fleet.Surface]float64{
			"security":            3,
			fleet.SurfaceChain:    3,
			fleet.SurfaceRegistry: 2.5,
			fleet.SurfaceCompiler: 2,
			fleet.SurfaceCall:     1.5,
			fleet.SurfaceFace:     1.5,
			fleet.SurfaceFeedback: 1.2,
			fleet.SurfaceDocs:     1,
			"perf":                0.8,
			fleet.SurfaceFleet:    0.5,
		},
		SurfaceDefault:  1,
		SourceDamping:   1,
		RunDamping:      0.5,
		RunCap:          100,
		RegressionBoost: 1.5,
		Untrusted:       0.1,
	}
}

// WithDefaults returns w with every missing or zero weight set to its
// default. The maps are copies, so the result can be changed freely.
func (w Weights) WithDefaults() Weights {
	d := DefaultWeights()
	out := w
	out.Severity = maps.Clone(d.Severity)
	maps.Copy(out.Severity, w.Severity)
	out.Surface = maps.Clone(d.Surface)
	maps.Copy(out.Surface, w.Surface)
	setDefault(&out.SurfaceDefault, d.SurfaceDefault)
	setDefault(&out.SourceDamping, d.SourceDamping)
	setDefault(&out.RunDamping, d.RunDamping)
	setDefault(&out.RegressionBoost, d.RegressionBoost)
	setDefault(&out.Untrusted, d.Untrusted)
	if out.RunCap == 0 {
		out.RunCap = d.RunCap
	}
	return out
}

func setDefault(v *float64, d float64) {
	if *v == 0 {
		*v = d
	}
}

// Validate reports every weight that is negative, not finite or otherwise
// unusable, naming it as the YAML key path under weights.
func (w Weights) Validate() error {
	var errs []error
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	for k, v := range w.Severity {
		if !k.Valid() {
			errs = append(errs, fmt.Errorf("weights.severity.%s: unknown severity", k))
		} else if bad(v) {
			errs = append(errs, fmt.Errorf("weights.severity.%s: %v is not a finite weight >= 0", k, v))
		}
	}
	for k, v := range w.Surface {
		if !k.Valid() {
			errs = append(errs, fmt.Errorf("weights.surface.%s: not a surface token", k))
		} else if bad(v) {
			errs = append(errs, fmt.Errorf("weights.surface.%s: %v is not a finite weight >= 0", k, v))
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"surface_default", w.SurfaceDefault}, {"source_damping", w.SourceDamping},
		{"run_damping", w.RunDamping}, {"regression_boost", w.RegressionBoost},
		{"untrusted", w.Untrusted},
	} {
		if bad(f.v) {
			errs = append(errs, fmt.Errorf("weights.%s: %v is not a finite weight >= 0", f.name, f.v))
		}
	}
	if w.RunCap < 0 {
		errs = append(errs, fmt.Errorf("weights.run_cap: %d is negative", w.RunCap))
	}
	return errors.Join(errs...)
}

// Validate reports a Config the engine cannot use, naming the field.
func (c Config) Validate() error {
	var errs []error
	if err := c.Weights.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MergeThreshold < 0 || math.IsNaN(c.MergeThreshold) {
		errs = append(errs, fmt.Errorf("merge_threshold: %v is negative", c.MergeThreshold))
	}
	if c.MetaEvery < 0 {
		errs = append(errs, fmt.Errorf("meta_every: %v is negative", c.MetaEvery))
	}
	if c.Top < 0 {
		errs = append(errs, fmt.Errorf("top: %d is negative", c.Top))
	}
	if c.History < 0 {
		errs = append(errs, fmt.Errorf("history: %d is negative", c.History))
	}
	return errors.Join(errs...)
}

// withDefaults fills every zero field of c with its default.
func (c Config) withDefaults() Config {
	c.Weights = c.Weights.WithDefaults()
	if c.MergeThreshold == 0 {
		c.MergeThreshold = DefaultMergeThreshold
	}
	if c.MetaEvery == 0 {
		c.MetaEvery = DefaultMetaEvery
	}
	if c.Top == 0 {
		c.Top = DefaultTop
	}
	if c.History == 0 {
		c.History = DefaultHistory
	}
	return c
}
