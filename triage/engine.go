package triage

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Entry is one record of the feedback log, as chain.FeedbackLog.Scan reads it.
type Entry = chain.Entry

// ErrOrder is wrapped by Engine.Add and Store.Append for an entry whose index
// does not follow the last one added: the log is append-only and gapless, so
// this means the caller is replaying, skipping or mixing logs.
var ErrOrder = errors.New("entry out of order")

// Engine clusters and ranks feedback entries in memory. Add entries in log
// order, as often as they arrive; Report is computed from the clusters'
// running aggregates, so its cost depends on the number of clusters, not
// entries. Every clustering decision is made when an entry arrives, from the
// entries before it, so adding a log in one call or in many gives the same
// clusters, ids and report.
//
// An Engine is not safe for concurrent use; Triage serializes access.
type Engine struct {
	cfg     Config
	weights []byte // cfg.Weights as JSON, for every Report
	trusted []fleet.Address
	seed    maphash.Seed

	started bool
	base    uint64  // index of the first entry added
	next    uint64  // index after the last entry added
	of      []int32 // entry index - base -> cluster, -1 when not a finding

	clusters []cluster
	parent   []int32          // cluster -> the cluster it was merged into, or itself (kept apart: every entry reads it)
	byID     map[string]int32 // cluster id -> its first cluster: a ref= may name a cluster (refByID)
	keys     map[litKey]int32 // literal keys every sender's entries may use
	ukeys    map[litKey]int32 // literal keys only untrusted entries may use
	written  writtenKeys      // (surface, text as written, literals replaced) -> cluster
	surfaces map[fleet.Surface]uint32
	sources  map[sourceKey]int32
	srcs     []sourceInfo
	lastSrc  struct {
		k  sourceKey
		id int32 // the source's id + 1; 0: none yet
	}
	sim *simIndex

	// splits are the entries unmerge records split out: entry index ->
	// the unmerge record. Known before the entry arrives (Presplit), a
	// split is applied then (splitOut); learnt later, it makes the
	// engine stale (Stale). splitFrom is, for each split entry, the
	// cluster it would have joined, which earlier corrections naming it
	// meant.
	splits    map[uint64]uint64
	splitFrom map[uint64]int32
	stale     bool
	// fpRepro maps the repro key of each false-positive cluster with a
	// repro to it, so that a new crash state with that repro rejoins
	// and regresses it (newGroup).
	fpRepro map[litKey]int32

	totals   fleet.ReportTotals
	foldMemo []foldMemo  // cluster -> its behaviourCore (Report's fold of places)
	repro    fleet.Repro // Add's parse scratch (fleet.ParseInto)
	buf      []byte
	toks     []uint64
	seq      []uint64
}

// litKey is a 128-bit hash of a literal key: the surface, whether the group
// is keyed by repro, summary or free text, and the normalized text with its
// literals replaced (appendLiterals). Two independent 64-bit halves keep
// accidental collisions out of reach (p ≈ 2^-100 over a billion keys) and
// the per-process random seed keeps crafted ones out of reach.
type litKey [2]uint64

type sourceKey struct {
	addr  fleet.Address
	label string
}

type sourceInfo struct {
	name    string
	trusted bool
}

// NewEngine returns an empty Engine. cfg's zero fields take their defaults;
// the error reports an invalid cfg.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("triage config: %w", err)
	}
	cfg = cfg.withDefaults()
	weights, err := json.Marshal(cfg.Weights)
	if err != nil {
		return nil, fmt.Errorf("triage config: %w", err)
	}
	return &Engine{
		cfg:      cfg,
		weights:  weights,
		trusted:  slices.Clone(cfg.Trusted),
		seed:     maphash.MakeSeed(),
		byID:     map[string]int32{},
		keys:     map[litKey]int32{},
		ukeys:    map[litKey]int32{},
		surfaces: map[fleet.Surface]uint32{},
		sources:  map[sourceKey]int32{},
		sim:      newSimIndex(len(cfg.Trusted) == 0),
	}, nil
}

// Config returns the configuration in use, defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Next returns the index after the last entry added (0 before any).
func (e *Engine) Next() uint64 { return e.next }

// Trusted reports whether a is one of the configured trusted senders.
func (e *Engine) Trusted(a fleet.Address) bool {
	for _, t := range e.trusted {
		if t == a {
			return true
		}
	}
	return false
}

// Add adds entries in log order: the first entry ever added may have any
// index, every later one must have the index after the one before (the log
// is append-only and has no holes). Add stops at the first entry that does
// not and returns an error wrapping ErrOrder; the entries before it were
// added. Add never fails on an entry's text: malformed, hostile or
// oversized text is kept as a free-form finding.
func (e *Engine) Add(entries []Entry) error {
	e.of = slices.Grow(e.of, len(entries))
	if procs := runtime.GOMAXPROCS(0); procs > 1 && len(entries) >= 4*parseChunk {
		return e.addParallel(entries, procs)
	}
	for k := range entries {
		f, perr := fleet.ParseInto(entries[k].Text, &e.repro)
		if err := e.addParsed(&entries[k], &f, perr); err != nil {
			return err
		}
	}
	return nil
}

// addParsed checks en's index and adds it, parsed as f (perr: Parse's error).
func (e *Engine) addParsed(en *Entry, f *fleet.Finding, perr error) error {
	if !e.started {
		e.started, e.base, e.next = true, en.Index, en.Index
	}
	if en.Index != e.next {
		return fmt.Errorf("add entry %d where %d was expected: %w", en.Index, e.next, ErrOrder)
	}
	e.of = append(e.of, e.add(en, f, perr))
	e.next++
	return nil
}

// parseChunk is how many entries a parser goroutine takes at a time.
const parseChunk = 2048

type parsed struct {
	f   fleet.Finding
	err error
	r   fleet.Repro // f.Repro's memory when it has one (fleet.ParseInto)
}

// addParallel is Add for large batches on several cores: parsing has no
// state, so procs-1 goroutines parse chunks ahead (at most 2·procs chunks
// waiting) while this one clusters them in log order, which is what every
// decision depends on. The result is the same as the sequential Add.
func (e *Engine) addParallel(entries []Entry, procs int) error {
	n := (len(entries) + parseChunk - 1) / parseChunk
	results := make([]chan []parsed, n)
	for i := range results {
		results[i] = make(chan []parsed, 1)
	}
	queue := make(chan int, n)
	for i := range n {
		queue <- i
	}
	close(queue)
	slots := make(chan struct{}, 2*procs) // chunks being parsed or waiting
	free := make(chan []parsed, 2*procs)  // consumed chunks' buffers, for reuse
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range procs - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// Take a slot before a chunk, so the chunks holding slots are
				// always the next ones the clustering needs.
				select {
				case slots <- struct{}{}:
				case <-stop:
					return
				}
				i, ok := <-queue
				if !ok {
					return
				}
				chunk := entries[i*parseChunk : min((i+1)*parseChunk, len(entries))]
				var out []parsed
				select {
				case out = <-free:
				default:
					out = make([]parsed, parseChunk)
				}
				out = out[:len(chunk)]
				for k := range chunk {
					out[k].f, out[k].err = fleet.ParseInto(chunk[k].Text, &out[k].r)
				}
				results[i] <- out
			}
		}()
	}
	for i := range n {
		out := <-results[i]
		<-slots
		base := i * parseChunk
		for k := range out {
			if err := e.addParsed(&entries[base+k], &out[k].f, out[k].err); err != nil {
				return err
			}
		}
		for k := range out { // drop the texts' references, keep the repro buffers
			out[k].f, out[k].err, out[k].r.Tool = fleet.Finding{}, nil, ""
		}
		select {
		case free <- out[:cap(out)]:
		default:
		}
	}
	return nil
}

// add takes one parsed entry and returns its cluster, or -1.
func (e *Engine) add(en *Entry, f *fleet.Finding, perr error) int32 {
	trusted := e.Trusted(en.Sender)
	e.totals.Entries++
	if !trusted {
		e.totals.Untrusted++
	}
	if perr != nil {
		e.totals.Malformed++
	}
	if !f.FreeForm {
		switch f.Kind {
		case fleet.KindMeta:
			e.totals.Meta++
			return -1
		case fleet.KindCause:
			e.applyCause(en, f, trusted)
			return -1
		case fleet.KindResolution, fleet.KindFalsePositive, fleet.KindDuplicateOf, fleet.KindNeedsRepro,
			fleet.KindUnmerge, fleet.KindAcceptedRisk:
			e.correct(en, f, trusted)
			return -1
		}
		if f.Severity == fleet.SeverityMeta {
			e.totals.Meta++
			return -1
		}
	}
	e.totals.Findings++
	if f.FreeForm {
		e.totals.FreeForm++
	}
	n := len(e.clusters)
	c := e.assign(en, f, trusted)
	if r, ok := e.splits[en.Index]; ok {
		c = e.splitOut(c, len(e.clusters) > n, en, f, trusted, r)
	}
	e.count(c, en, f, trusted)
	return c
}

// assign returns the cluster a finding belongs to, creating one when needed.
func (e *Engine) assign(en *Entry, f *fleet.Finding, trusted bool) int32 {
	// The written key is what the literal key is made of, as written, with
	// its literals replaced: the repro when there is one (its summary may be
	// worded any way), else the summary. So the next run's report of a known
	// bug (new sandbox names, new numbers, other words) skips canonicalizing
	// it. It is a grouping of its own, not a cache of literal keys: two
	// texts alike as written can differ once normalized (D12 is a word with
	// a digit run, d4691 a hex literal), and the first one decides for
	// both, for good, so that no clustering depends on what was evicted.
	h := e.writtenHash(f)
	i, ok := e.written.find(h)
	if s := e.written.slots[i]; ok && (s.pub || !trusted) {
		return e.find(s.c)
	}
	key, hasRepro := e.literalKey(f)
	c, pub := int32(-1), true
	if id, ok := e.keys[key]; ok {
		c = e.find(id)
	} else if id, ok := e.ukeys[key]; ok && !trusted {
		c, pub = e.find(id), false
	} else {
		c, pub = e.newGroup(en, f, key, hasRepro, trusted)
	}
	// A trusted finding replaces what an untrusted one decided: untrusted
	// text never decides for trusted findings.
	e.written.set(i, h, c, pub)
	return c
}

// writtenHash is the hash of a finding's written key (see assign).
func (e *Engine) writtenHash(f *fleet.Finding) uint64 {
	b := append(e.buf[:0], f.Surface...)
	switch {
	case f.FreeForm:
		b = append(b, 0, 'f')
		b = appendLiterals(b, f.Summary)
	case f.State() != "":
		b = append(b, 0, 'c')
		b = append(b, f.State()...)
	case f.Repro != nil:
		b = append(b, 0, 'r')
		b = appendLiterals(b, f.Repro.Tool)
		b = append(b, 0)
		b = appendLiterals(b, f.Repro.Args)
	default:
		b = append(b, 0, 's')
		b = appendLiterals(b, f.Summary)
	}
	e.buf = b
	return maphash.Bytes(e.seed, b)
}

// reproKey is the literal key a finding of surface s with repro r and no
// crash state has.
func (e *Engine) reproKey(s fleet.Surface, r *fleet.Repro) litKey {
	b := append(e.buf[:0], s...)
	b = append(b, 0, 'r', 0)
	b = appendLiterals(b, fleet.NormalizeRepro(*r))
	e.buf = b
	return litKey{maphash.Bytes(e.seed, b), maphash.Bytes(e.seed, append(b, 0xff))}
}

// literalKey computes a finding's literal key (see litKey).
func (e *Engine) literalKey(f *fleet.Finding) (litKey, bool) {
	b := append(e.buf[:0], f.Surface...)
	hasRepro := f.Repro != nil
	switch {
	case f.FreeForm:
		b = append(b, 0, 'f', 0)
		b = appendLiterals(b, fleet.NormalizeSummary(f.Summary))
	case f.State() != "":
		// A crash state names the bug whatever input showed it (see
		// fleet.KeyState): it anchors the cluster like a repro does.
		b = append(b, 0, 'c', 0)
		b = append(b, f.State()...)
		hasRepro = true
	case hasRepro:
		b = append(b, 0, 'r', 0)
		b = appendLiterals(b, fleet.NormalizeRepro(*f.Repro))
	default:
		b = append(b, 0, 's', 0)
		b = appendLiterals(b, fleet.NormalizeSummary(f.Summary))
	}
	e.buf = b
	return litKey{maphash.Bytes(e.seed, b), maphash.Bytes(e.seed, append(b, 0xff))}, hasRepro
}

// newGroup places a finding whose literal key no cluster holds yet: into the
// most similar cluster of its surface when one is similar enough and may take
// it, else into a new cluster. It returns the cluster and whether the key was
// registered for every sender.
func (e *Engine) newGroup(en *Entry, f *fleet.Finding, key litKey, hasRepro, trusted bool) (int32, bool) {
	surface := e.surfaceID(f.Surface)
	var toks, seq []uint64
	if !f.FreeForm {
		e.seq = tokenize(e.seq[:0], headline(f.Summary))
		e.toks = tokenSet(e.toks[:0], e.seq)
		toks, seq = e.toks, e.seq
	}
	if trusted && len(e.fpRepro) > 0 && f.State() != "" && f.Repro != nil {
		// A new crash state with the repro of a false positive: the same
		// input now fails another way, which is a reason to look again.
		if c, ok := e.fpRepro[e.reproKey(f.Surface, f.Repro)]; ok {
			c = e.find(c)
			if cl := &e.clusters[c]; cl.corr.kind == fleet.KindFalsePositive && !cl.freeForm {
				if cl.reopen.index == 0 {
					cl.reopen = reopen{index: en.Index, reason: fmt.Sprintf("new crash state %.80q (entry %d) with the repro marked a false positive at entry %d", f.State(), en.Index, cl.corr.index)}
				}
				e.keys[key] = c
				return c, true
			}
		}
	}
	var seqSum uint64
	if len(toks) >= minSimTokens {
		seqSum = e.sim.seqHash(surface, seq)
		if !hasRepro && trusted {
			// The same words in the same order as a summary placed before
			// (other punctuation, case, literals or detail lines): the same
			// report, so the same decision, without asking again.
			if c, ok := e.sim.placed[seqSum]; ok {
				c = e.find(c)
				e.keys[key] = c
				return c, true
			}
		}
		best, _ := e.sim.query(surface, toks, seq, e.cfg.MergeThreshold, trusted, e.find, func(c int32) bool {
			cl := &e.clusters[c]
			// A repro names one bug: a group with a new repro may only join a
			// cluster that has none yet (its other reports omitted it), or
			// one dismissed as a false positive and not regressed yet: the
			// same report with a materially different repro is what the
			// dismissal did not see, so it brings the cluster back.
			return !cl.freeForm && !(hasRepro && cl.anchored && !(trusted && cl.corr.kind == fleet.KindFalsePositive && cl.reopen.index == 0))
		})
		if best >= 0 {
			if !trusted {
				// Untrusted text may join a cluster but never becomes a
				// bridge: its key and words stay out of what trusted
				// entries are matched against.
				e.ukeys[key] = best
				return best, false
			}
			if also := e.sim.also; also >= 0 && also != best && e.bridges(best, also) {
				// The report reads as both clusters' bug: they are one.
				dst, src := min(best, also), max(best, also)
				e.merge(src, dst)
				e.sim.mergeInto(src, dst)
				best = dst
			}
			cl := &e.clusters[best]
			e.keys[key] = best
			if hasRepro && cl.corr.kind == fleet.KindFalsePositive && cl.reopen.index == 0 {
				// A repro (or crash state) the false-positive mark did not
				// see: none then, or one materially different (another
				// literal key, joined by its words alone).
				what := "a repro"
				if f.State() != "" {
					what = fmt.Sprintf("crash state %.80q", f.State())
				}
				why := fmt.Sprintf("%s (entry %d) where there was none when it was marked a false positive at entry %d", what, en.Index, cl.corr.index)
				if cl.anchored {
					why = fmt.Sprintf("%s (entry %d) unlike the one marked a false positive at entry %d", what, en.Index, cl.corr.index)
				}
				cl.reopen = reopen{index: en.Index, reason: why}
			}
			cl.anchored = cl.anchored || hasRepro
			if !hasRepro {
				e.sim.placed[seqSum] = best
			}
			if cl.sigs < maxSigsPerCluster && e.sim.newSeq(seqSum, true) {
				cl.sigs++
				e.sim.add(best, surface, toks, seq, true, e.find)
			}
			return best, true
		}
	}
	c := e.newCluster(f)
	cl := &e.clusters[c]
	cl.anchored = hasRepro
	e.keys[key] = c
	if len(toks) >= minSimTokens {
		if trusted && !hasRepro {
			e.sim.placed[seqSum] = c
		}
		if e.sim.newSeq(seqSum, trusted) {
			cl.sigs = 1
			e.sim.add(c, surface, toks, seq, trusted, e.find)
		}
	}
	return c, true
}

// headline is the first non-empty line of a summary: what similarity
// compares. Later lines are details (expected and actual output, "found by
// qa-ux during r-...", a trace) that vary between reports of one bug and
// repeat across reports of different ones.
func headline(s string) string {
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		if strings.TrimSpace(line) != "" {
			return line
		}
		s = rest
	}
	return ""
}

// minSimTokens is the fewest summary tokens a finding needs to be matched by
// similarity; shorter summaries only merge by literal key.
const minSimTokens = 2

// maxSigsPerCluster bounds the summaries indexed per cluster.
const maxSigsPerCluster = 16

func (e *Engine) surfaceID(s fleet.Surface) uint32 {
	id, ok := e.surfaces[s]
	if !ok {
		id = uint32(len(e.surfaces))
		e.surfaces[fleet.Surface(strings.Clone(string(s)))] = id
	}
	return id
}

func (e *Engine) newCluster(f *fleet.Finding) int32 {
	id := int32(len(e.clusters))
	e.parent = append(e.parent, id)
	e.clusters = append(e.clusters, cluster{
		id:       fleet.Fingerprint(*f),
		surface:  fleet.Surface(strings.Clone(string(f.Surface))),
		freeForm: f.FreeForm,
	})
	if _, ok := e.byID[e.clusters[id].id]; !ok {
		e.byID[e.clusters[id].id] = id
	}
	return id
}

// find returns the cluster c was merged into (duplicate-of), or c.
func (e *Engine) find(c int32) int32 {
	for e.parent[c] != c {
		p := e.parent[c]
		e.parent[c] = e.parent[p] // path halving
		c = p
	}
	return c
}

// count adds a finding to its cluster's aggregates.
func (e *Engine) count(c int32, en *Entry, f *fleet.Finding, trusted bool) {
	cl := &e.clusters[c]
	src := e.source(en.Sender, f.Source, trusted)
	t := en.Time.Unix()
	var run uint64
	if f.Run != "" {
		run = maphash.String(e.seed, f.Run)
	} else {
		// No run id: count a source's reports in one UTC day as one run,
		// so a burst without run ids cannot pose as many runs.
		run = mix64(uint64(floorDiv(t, 86400)) ^ hashK2)
	}
	pair := mix64(run ^ (uint64(src)+1)*hashK1)
	k := 1
	if trusted {
		k = 0
	}
	cl.counted[k].add(en.Index, t, int8(f.Severity.Rank()), src, pair)
	if !cl.rep.set || trusted && !cl.rep.trusted {
		cl.rep = rep{title: title(f), trusted: trusted, set: true, index: en.Index}
		cl.rep.repro = cloneRepro(f.Repro)
	} else if cl.rep.repro == nil && f.Repro != nil && trusted == cl.rep.trusted {
		cl.rep.repro = cloneRepro(f.Repro)
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func cloneRepro(r *fleet.Repro) *fleet.Repro {
	if r == nil {
		return nil
	}
	return &fleet.Repro{Tool: strings.Clone(r.Tool), Args: slices.Clone(r.Args)}
}

// maxTitle bounds a cluster title in bytes.
const maxTitle = 200

// title is the first non-empty line of a finding's summary, at most maxTitle
// bytes, copied so that the entry text can be freed.
func title(f *fleet.Finding) string {
	s := f.Summary
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		if line = strings.TrimSpace(line); line != "" {
			s = line
			break
		}
		s = rest
	}
	if len(s) > maxTitle {
		n := maxTitle
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.Clone(s)
}

// source interns a reporting source. A trusted sender's source is its
// source= label (the fleet posts every specialist under one identity); an
// untrusted sender's is its address alone, since it can write any label.
func (e *Engine) source(a fleet.Address, label string, trusted bool) int32 {
	k := sourceKey{addr: a}
	if trusted {
		k.label = label
	}
	if e.lastSrc.id > 0 && e.lastSrc.k == k {
		return e.lastSrc.id - 1 // a run posts its findings one after another
	}
	if id, ok := e.sources[k]; ok {
		e.lastSrc.k, e.lastSrc.id = k, id+1
		return id
	}
	id := int32(len(e.srcs))
	k.label = strings.Clone(k.label)
	e.sources[k] = id
	name := a.String()
	if trusted && label != "" {
		name = k.label
	}
	e.srcs = append(e.srcs, sourceInfo{name: name, trusted: trusted})
	return id
}

// ClusterOf returns the id of the cluster that holds the finding at index,
// after duplicate-of merges. ok is false for an index that is not a finding
// (a correction, a meta summary, or outside the entries added).
func (e *Engine) ClusterOf(index uint64) (id string, ok bool) {
	c, ok := e.clusterAt(index)
	if !ok {
		return "", false
	}
	return e.clusters[c].id, true
}

// Surface returns the surface of the cluster holding the finding at index,
// for correction records that name it. ok is as for ClusterOf.
func (e *Engine) Surface(index uint64) (s fleet.Surface, ok bool) {
	c, ok := e.clusterAt(index)
	if !ok {
		return "", false
	}
	return e.clusters[c].surface, true
}

func (e *Engine) clusterAt(index uint64) (int32, bool) {
	if !e.started || index < e.base || index >= e.next {
		return 0, false
	}
	c := e.of[index-e.base]
	if c < 0 {
		return 0, false
	}
	return e.find(c), true
}

// bridges reports whether a trusted report that matches clusters a and b
// both may merge them: neither was corrected (a resolved or false-positive
// cluster stays as marked) or split out by an unmerge, they do not hold
// two different repros, and their leading summaries do not name different
// things.
func (e *Engine) bridges(a, b int32) bool {
	ca, cb := &e.clusters[a], &e.clusters[b]
	if ca.anchored && cb.anchored || ca.corr.kind != "" || cb.corr.kind != "" || ca.freeForm || cb.freeForm || ca.split != 0 || cb.split != 0 {
		return false
	}
	return e.sim.compatible(a, b, e.cfg.MergeThreshold)
}
