package triage

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// Correction is an operator's (or the fix stage's) record about an earlier
// finding. On the log it is a qa/v1 envelope whose ref= names the corrected
// entry by its index, and, for duplicate-of, whose of= names an entry of the
// cluster it duplicates:
//
//	qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=duplicate-of ref=12 of=7
//	qa/v1 source=qa-fixer sev=info surface=compiler kind=needs-repro ref=12
//
// ref= may also be a cluster id (the fingerprint of the cluster's first
// finding, 16 hex digits), as the fix stage writes it:
//
//	qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=5c1e0a9d2b3f4a10
//
// A correction applies to the whole cluster holding entry ref at the time
// the correction is read, and only when its sender is trusted; sev, surface
// and source are ignored by triage (they are required by qa/v1).
type Correction struct {
	Kind    fleet.Kind    // KindResolution, KindFalsePositive, KindDuplicateOf or KindNeedsRepro
	Ref     uint64        // the corrected entry
	Of      uint64        // for KindDuplicateOf: an entry of the cluster Ref duplicates
	Source  string        // "" means "qa-operator"
	Surface fleet.Surface // "" means "fleet"
	Note    string        // optional free text, e.g. why
}

// keyOf is the header key of a duplicate-of target.
const keyOf = "of"

// ErrBadMark is wrapped by ParseMark for an argument it does not understand.
var ErrBadMark = errors.New("want false-positive, resolved or duplicate-of=J")

// ParseMark parses the arguments of `fleetd findings mark INDEX WHAT`, where
// WHAT is false-positive, resolved (or resolution) or duplicate-of=J.
func ParseMark(index, what string) (Correction, error) {
	ref, err := parseIndex(index)
	if err != nil {
		return Correction{}, fmt.Errorf("mark: index %q: %w", index, err)
	}
	c := Correction{Ref: ref}
	switch {
	case what == "false-positive":
		c.Kind = fleet.KindFalsePositive
	case what == "resolved" || what == "resolution":
		c.Kind = fleet.KindResolution
	case strings.HasPrefix(what, "duplicate-of="):
		of, err := parseIndex(strings.TrimPrefix(what, "duplicate-of="))
		if err != nil {
			return Correction{}, fmt.Errorf("mark: %q: %w", what, err)
		}
		if of == ref {
			return Correction{}, fmt.Errorf("mark: entry %d cannot duplicate itself", ref)
		}
		c.Kind, c.Of = fleet.KindDuplicateOf, of
	default:
		return Correction{}, fmt.Errorf("mark: %q: %w", what, ErrBadMark)
	}
	return c, nil
}

// parseIndex accepts decimal digits only: no sign, space or prefix.
func parseIndex(s string) (uint64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errors.New("not an entry index")
	}
	return strconv.ParseUint(s, 10, 64)
}

// Format returns the correction as qa/v1 text ready to post.
func (c Correction) Format() (string, error) {
	switch c.Kind {
	case fleet.KindResolution, fleet.KindFalsePositive, fleet.KindNeedsRepro, fleet.KindDuplicateOf:
	default:
		return "", fmt.Errorf("correction: kind %q is not a correction", c.Kind)
	}
	f := fleet.Finding{
		Source: c.Source, Severity: fleet.SeverityInfo, Surface: c.Surface, Kind: c.Kind,
		Ref: strconv.FormatUint(c.Ref, 10), Summary: c.Note,
	}
	if f.Source == "" {
		f.Source = "qa-operator"
	}
	if f.Surface == "" {
		f.Surface = fleet.SurfaceFleet
	}
	if c.Kind == fleet.KindDuplicateOf {
		if c.Of == c.Ref {
			return "", fmt.Errorf("correction: entry %d cannot duplicate itself", c.Ref)
		}
		f.Extra = []fleet.Field{{Key: keyOf, Value: strconv.FormatUint(c.Of, 10)}}
	}
	text, err := fleet.Format(f)
	if err != nil {
		return "", fmt.Errorf("correction: %w", err)
	}
	return text, nil
}

// correct applies a correction record read at en.
func (e *Engine) correct(en *Entry, f *fleet.Finding, trusted bool) {
	e.totals.Corrections++
	if !trusted {
		e.totals.CorrectionsIgnored++
		return
	}
	c, ok := e.refCluster(f.Ref, en.Index)
	if !ok {
		e.totals.CorrectionsInvalid++
		return
	}
	switch f.Kind {
	case fleet.KindResolution, fleet.KindFalsePositive:
		e.clusters[c].corr = corr{kind: f.Kind, index: en.Index}
	case fleet.KindNeedsRepro:
		e.clusters[c].needsRepro = true
	case fleet.KindDuplicateOf:
		of := ""
		for _, x := range f.Extra {
			if x.Key == keyOf {
				of = x.Value
			}
		}
		target, ok := e.refCluster(of, en.Index)
		if !ok {
			e.totals.CorrectionsInvalid++
			return
		}
		if target != c {
			e.merge(c, target)
		}
	}
	e.totals.CorrectionsApplied++
}

// refCluster resolves a ref= value to the cluster of an earlier finding:
// an entry index, or a cluster id (refByID).
func (e *Engine) refCluster(ref string, at uint64) (int32, bool) {
	if isClusterID(ref) {
		return e.refByID(ref)
	}
	i, err := parseIndex(ref)
	if err != nil || i >= at {
		return 0, false
	}
	return e.clusterAt(i)
}

// isClusterID reports whether ref has the shape of a cluster id, a
// fleet.Fingerprint: 16 lowercase hex digits. An entry index that long
// (10^15 and up) cannot occur, so the two never collide.
func isClusterID(ref string) bool {
	if len(ref) != 16 {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// refByID resolves a cluster id, as the fix stage writes it (kind=resolution
// ref=<fp>, kind=needs-repro ref=<fp>), to that cluster after duplicate-of
// merges. Only clusters created by entries before the correction exist
// when it is read, so a ref can never name a later finding.
func (e *Engine) refByID(id string) (int32, bool) {
	c, ok := e.byID[id]
	if !ok {
		return 0, false
	}
	return e.find(c), true
}
