package fleet

// Kind says what a log entry is: a new finding, or a record about earlier
// ones. Kinds this version does not know are kept as written so that older
// daemons pass newer records through instead of rejecting them.
type Kind string

// The known kinds. The empty Kind means KindFinding.
const (
	KindFinding       Kind = "finding"
	KindResolution    Kind = "resolution"
	KindFalsePositive Kind = "false-positive"
	KindDuplicateOf   Kind = "duplicate-of"
	KindNeedsRepro    Kind = "needs-repro"
	KindMeta          Kind = "meta"
	// KindPersona publishes the fleet's running set of specialists (sev=meta,
	// ref= the set's hash): what anyone can read of what the fleet is.
	KindPersona Kind = "persona"
	// KindUnmerge splits a member (an entry, or a place of a folded row)
	// out of the cluster or row it was put in; KindAcceptedRisk accepts a
	// cluster's risk, with a reason and an optional expiry (until=).
	KindUnmerge      Kind = "unmerge"
	KindAcceptedRisk Kind = "accepted-risk"
	// KindCause is the fix stage's bisection of a cluster (ref=): the
	// commit that introduced it, or since when it is present. Posted with
	// severity meta, so a triage that does not read it counts it as meta.
	KindCause Kind = "cause"
)

// Known reports whether k is one of the known kinds, or empty (which means
// KindFinding). Kinds are case-sensitive: "Resolution" is not known.
func (k Kind) Known() bool {
	switch k {
	case "", KindFinding, KindResolution, KindFalsePositive, KindDuplicateOf, KindNeedsRepro, KindMeta, KindPersona, KindUnmerge, KindAcceptedRisk, KindCause:
		return true
	}
	return false
}

// OrDefault returns k, or KindFinding when k is empty, so that callers can
// compare kinds without caring whether the writer spelled out the default.
func (k Kind) OrDefault() Kind {
	if k == "" {
		return KindFinding
	}
	return k
}
