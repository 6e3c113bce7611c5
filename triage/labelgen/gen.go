package labelgen

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// Options shape a generated log. Zero fields take the defaults noted.
type Options struct {
	Seed       uint64
	Days       int       // length of the simulated period; default 30
	RunsPerDay int       // runs per probe per day; default 6
	Findings   int       // approximate trusted findings from regular runs; default 8000
	Bugs       int       // distinct real bugs; default: every base combination (~90)
	Start      time.Time // first day; default 2026-10-23T00:00:00Z
	SpamBursts int       // probes stuck in a loop; default 4
	NoiseRate  float64   // free-form human entries per finding; default 0.03
	// Quiet turns off the adversarial parts (untrusted floods, copies,
	// forged corrections, bridges, hostile text), for benchmarks that want
	// a plain workload.
	Quiet bool
}

func (o Options) withDefaults() Options {
	if o.Days == 0 {
		o.Days = 30
	}
	if o.RunsPerDay == 0 {
		o.RunsPerDay = 6
	}
	if o.Findings == 0 {
		o.Findings = 8000
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 10, 23, 0, 0, 0, 0, time.UTC)
	}
	if o.SpamBursts == 0 {
		o.SpamBursts = 4
	}
	if o.NoiseRate == 0 {
		o.NoiseRate = 0.03
	}
	return o
}

// The generator's identities. Fleet and Operator are trusted.
var (
	Fleet    = addr(0xf1)
	Operator = addr(0x0e)
)

func addr(b byte) fleet.Address {
	var a fleet.Address
	for i := range a {
		a[i] = b
	}
	return a
}

var probes = []string{"qa-smoke", "qa-security", "qa-fuzz", "qa-ux", "qa-perf"}

// variation is how often a probe words a finding other than its usual way:
// playbooks are deterministic templates, model-driven probes paraphrase.
var variation = map[string]float64{"qa-smoke": 0.05, "qa-fuzz": 0.05, "qa-security": 0.3, "qa-ux": 0.4, "qa-perf": 0.3}

// bug is one real problem of the simulated platform.
type bug struct {
	id       string
	surface  string
	subj     subject
	prob     problem
	sev      string
	sources  []string
	weight   float64
	from, to int // active days [from, to)
	// lifecycle
	resolveDay int // -1: never resolved
	regressDay int // -1: no regression
	fpDay      int // -1: never marked false positive
	twin       *subject
	twinMarked bool
	codename   string
	preferred  map[string][2]int // per source: preferred problem and subject phrasing
}

// event is an entry before it has an index.
type event struct {
	t      time.Time
	sender fleet.Address
	text   string
	label  string
	role   string
	// corrections resolve their refs once indexes are known
	corr     fleet.Kind
	target   string // label whose entries ref may name
	ofTarget string // for duplicate-of: label whose entries of may name
	twinRef  bool   // ref must name a twin entry
	badRef   string // a deliberately invalid ref
	source   string
	seq      int
}

type gen struct {
	o     Options
	r     *rand.Rand
	bugs  []*bug
	evs   []event
	seq   int
	label map[string]*Cluster
}

// Generate returns a labelled log. The same Options give the same log.
func Generate(o Options) *Log {
	o = o.withDefaults()
	g := &gen{o: o, r: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), label: map[string]*Cluster{}}
	g.makeBugs()
	g.simulate()
	g.spam()
	g.humans()
	if !o.Quiet {
		g.attacks()
	}
	g.meta()
	return g.finish()
}

func (g *gen) vocab() []surfaceVocab {
	return []surfaceVocab{compilerVocab(), registryVocab(), chainVocab(), callVocab(), faceVocab(), docsVocab(), perfVocab()}
}

var codenames = []string{"kestrel", "osprey", "heron", "plover", "tern", "wren", "finch", "lark", "swift", "rook", "merlin", "harrier", "ibis", "egret", "avocet", "dunlin", "curlew", "godwit", "petrel", "shrike", "siskin", "linnet", "bunting", "pipit", "warbler", "thrush", "dipper", "nuthatch", "treecreeper", "goldcrest"}

func (g *gen) makeBugs() {
	type combo struct {
		v    surfaceVocab
		s, p int
	}
	var combos []combo
	for _, v := range g.vocab() {
		for si, s := range v.subjects {
			if s.tool != "" {
				// One repro shows one behaviour: one bug per subject.
				combos = append(combos, combo{v, si, g.r.IntN(len(v.problems))})
				continue
			}
			for pi := range v.problems {
				combos = append(combos, combo{v, si, pi})
			}
		}
	}
	n := g.o.Bugs
	if n == 0 {
		n = len(combos)
	}
	g.r.Shuffle(len(combos), func(i, j int) { combos[i], combos[j] = combos[j], combos[i] })
	for i := range n {
		c := combos[i%len(combos)]
		b := &bug{
			id:         fmt.Sprintf("b%04d", i),
			surface:    c.v.surface,
			subj:       c.v.subjects[c.s],
			prob:       c.v.problems[c.p],
			resolveDay: -1, regressDay: -1, fpDay: -1,
			preferred: map[string][2]int{},
		}
		if round := i / len(combos); round > 0 {
			// Past the base combinations every further bug is the same
			// kind of bug somewhere else: a new module, page or path.
			// Words, not numbers: a number would be a literal, and bugs
			// that differ only in a literal are one bug by definition.
			k := round - 1
			b.codename = codenames[k%len(codenames)]
			if k >= len(codenames) {
				b.codename = codenames[(k/len(codenames)-1)%len(codenames)] + "-" + b.codename
			}
		}
		b.sev = b.prob.sev
		k := 1 + g.r.IntN(min(3, len(c.v.sources)))
		perm := g.r.Perm(len(c.v.sources))
		for _, j := range perm[:k] {
			b.sources = append(b.sources, c.v.sources[j])
		}
		b.weight = math.Exp(g.r.NormFloat64() * 1.1)
		days := g.o.Days
		b.from = g.r.IntN(max(1, days*2/3))
		b.to = days
		if g.r.Float64() < 0.2 {
			b.to = b.from + 1 + g.r.IntN(max(1, days-b.from))
		}
		switch x := g.r.Float64(); {
		case x < 0.14 && b.to-b.from > 3:
			b.resolveDay = b.from + 1 + g.r.IntN(b.to-b.from-1)
			if g.r.Float64() < 0.35 && days-b.resolveDay > 3 {
				b.regressDay = b.resolveDay + 2 + g.r.IntN(days-b.resolveDay-2)
				b.to = days
			} else {
				b.to = b.resolveDay
			}
		case x < 0.20 && b.to-b.from > 2:
			b.fpDay = b.from + 1 + g.r.IntN(b.to-b.from-1)
		}
		if b.subj.tool != "" && g.r.Float64() < 0.05 {
			// The same bug reached through another tool: only an
			// operator's duplicate-of can tell (most twins get one).
			twin := twinOf(b.subj)
			b.twin = &twin
			b.twinMarked = g.r.Float64() < 0.7
		}
		for _, src := range b.sources {
			b.preferred[src] = [2]int{g.r.IntN(len(b.prob.phrases)), g.r.IntN(len(b.subj.phrases))}
		}
		g.bugs = append(g.bugs, b)
		g.label[b.id] = &Cluster{Severity: b.sev, Surface: b.surface}
	}
}

// twinOf is another way to reach the bug a subject shows.
func twinOf(s subject) subject {
	t := subject{phrases: s.phrases}
	switch s.tool {
	case "qa_compile":
		t.tool, t.args = "qa_publish", append([]arg{{key: "name", value: "{name}"}}, s.args...)
	case "qa_fetch":
		t.tool, t.args = "qa_call", []arg{{key: "target", value: "{name}"}, {key: "message", value: "fetch " + s.args[0].value}}
	default:
		// The twin must name its bug: replay the original call, args and all.
		msg := "replay " + s.tool
		for _, a := range s.args {
			msg += " " + a.key + "=" + a.value
		}
		t.tool, t.args = "qa_call", []arg{{key: "target", value: "{name}"}, {key: "message", value: msg}}
	}
	return t
}

func (g *gen) add(ev event) {
	ev.seq = g.seq
	g.seq++
	g.evs = append(g.evs, ev)
}

func (g *gen) day(d int) time.Time { return g.o.Start.AddDate(0, 0, d) }

func (b *bug) activeOn(d int) bool {
	switch {
	case d < b.from || d >= b.to:
		return false
	case b.resolveDay >= 0 && d >= b.resolveDay && (b.regressDay < 0 || d < b.regressDay):
		return false
	}
	return true
}

// simulate runs every probe RunsPerDay times a day; each run reports a
// Poisson number of the active bugs in its scope, picked by weight.
func (g *gen) simulate() {
	o := g.o
	runs := o.Days * o.RunsPerDay * len(probes)
	lambda := float64(o.Findings) / float64(runs)
	scope := map[string][]*bug{}
	for _, b := range g.bugs {
		for _, s := range b.sources {
			scope[s] = append(scope[s], b)
		}
	}
	step := 24 * time.Hour / time.Duration(o.RunsPerDay)
	var active []*bug
	var weights []float64
	for d := range o.Days {
		for slot := range o.RunsPerDay {
			for pi, p := range probes {
				start := g.day(d).Add(time.Duration(slot)*step + time.Duration(pi)*7*time.Minute)
				run := fmt.Sprintf("r-%s-%s", start.Format("20060102-1504"), strings.TrimPrefix(p, "qa-"))
				active, weights = active[:0], weights[:0]
				total := 0.0
				for _, b := range scope[p] {
					if b.activeOn(d) {
						active = append(active, b)
						weights = append(weights, b.weight)
						total += b.weight
					}
				}
				if len(active) == 0 {
					continue
				}
				k := min(poisson(g.r, lambda), len(active))
				for i := range k {
					j := pick(g.r, weights, total)
					b := active[j]
					total -= weights[j]
					weights[j] = 0
					t := start.Add(time.Duration(i*20+g.r.IntN(20)) * time.Second)
					g.report(b, p, run, t, "finding", false)
					if g.r.Float64() < 0.03 { // reported twice in one run
						g.report(b, p, run, t.Add(3*time.Second), "finding", false)
					}
					if b.twin != nil && g.r.Float64() < 0.25 {
						g.report(b, p, run, t.Add(5*time.Second), "twin", true)
					}
				}
			}
		}
	}
	g.lifecycle()
}

// lifecycle adds the fix stage's resolutions, the operator's false-positive
// marks and duplicate-of marks, and needs-repro notes.
func (g *gen) lifecycle() {
	for _, b := range g.bugs {
		if b.resolveDay >= 0 {
			g.add(event{t: g.day(b.resolveDay).Add(-30 * time.Minute), sender: Fleet, role: "correction", corr: fleet.KindResolution, target: b.id, source: "qa-fixer"})
		}
		if b.fpDay >= 0 {
			g.add(event{t: g.day(b.fpDay).Add(9 * time.Hour), sender: Operator, role: "correction", corr: fleet.KindFalsePositive, target: b.id, source: "qa-operator"})
		}
		if b.twin != nil && b.twinMarked {
			d := min(b.to-1, b.from+3)
			g.add(event{t: g.day(d).Add(23 * time.Hour), sender: Operator, role: "correction", corr: fleet.KindDuplicateOf, target: b.id, twinRef: true, ofTarget: b.id, source: "qa-operator"})
		}
		if b.subj.tool == "" && g.r.Float64() < 0.1 {
			g.add(event{t: g.day(b.from).Add(20 * time.Hour), sender: Fleet, role: "correction", corr: fleet.KindNeedsRepro, target: b.id, source: "qa-fixer"})
		}
	}
	// Mistakes an operator makes: a ref that is not a finding, or not yet
	// written. Triage must count them as invalid, not crash or misapply.
	for i := range 3 {
		t := g.day(g.o.Days/2 + i)
		g.add(event{t: t, sender: Operator, role: "correction", corr: fleet.KindFalsePositive, badRef: strconv.Itoa(1 << 40), source: "qa-operator"})
		g.add(event{t: t, sender: Operator, role: "correction", corr: fleet.KindResolution, badRef: "twelve", source: "qa-operator"})
	}
}

// report adds one finding of b by probe src.
func (g *gen) report(b *bug, src, run string, t time.Time, role string, twin bool) {
	g.add(event{t: t, sender: Fleet, text: g.envelope(b, src, run, twin, ""), label: b.id, role: role, source: src})
}

// envelope writes b as qa/v1 text the way a probe might: header keys in any
// order with uneven spacing, severity and surface in odd case now and then,
// a claimed fp= that may be wrong, wording chosen per source with variation,
// stray whitespace and case in the summary, and repro args in random key
// order, spacing and literals.
func (g *gen) envelope(b *bug, src, run string, twin bool, sevOverride string) string {
	r := g.r
	sev := b.sev
	if sevOverride != "" {
		sev = sevOverride
	} else if r.Float64() < 0.05 {
		sev = lower(sev) // under-reported now and then
	}
	fields := []string{"source=" + src, "sev=" + g.oddCase(sev), "surface=" + g.oddCase(b.surface)}
	if run != "" {
		fields = append(fields, "run="+run)
	}
	if x := r.Float64(); x < 0.4 {
		fields = append(fields, "fp="+g.hexN(16))
	} else if x < 0.5 {
		fields = append(fields, "kind=finding")
	}
	if r.Float64() < 0.1 {
		fields = append(fields, extraKeys[r.IntN(len(extraKeys))])
	}
	r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	var sb strings.Builder
	sb.WriteString("qa/v1")
	for _, f := range fields {
		sb.WriteString(g.sep())
		sb.WriteString(f)
	}
	sb.WriteByte('\n')
	sb.WriteString(g.summary(b, src, run))
	subj := b.subj
	if twin {
		subj = *b.twin
	}
	if subj.tool != "" && (r.Float64() > 0.02 || twin) {
		sb.WriteString("\nrepro: ")
		sb.WriteString(subj.tool)
		sb.WriteByte(' ')
		sb.WriteString(g.args(subj.args, run, b.codename))
	}
	return sb.String()
}

func lower(sev string) string {
	switch sev {
	case "critical":
		return "high"
	case "high":
		return "medium"
	case "medium":
		return "low"
	case "low":
		return "info"
	}
	return sev
}

func (g *gen) sep() string {
	switch g.r.IntN(8) {
	case 0:
		return "  "
	case 1:
		return "\t"
	case 2:
		return " \t "
	}
	return " "
}

func (g *gen) oddCase(s string) string {
	switch g.r.IntN(20) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

func (g *gen) hexN(n int) string {
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return hex.EncodeToString(b)[:n]
}

// summary words b's finding: the source's usual phrasing 70% of the time.
func (g *gen) summary(b *bug, src, run string) string {
	r := g.r
	pp, sp := b.preferred[src][0], b.preferred[src][1]
	v, ok := variation[src]
	if !ok {
		v = 0.5
	}
	if r.Float64() < v {
		pp = r.IntN(len(b.prob.phrases))
	}
	if r.Float64() < v {
		sp = r.IntN(len(b.subj.phrases))
	}
	s := b.subj.phrases[sp]
	if b.codename != "" {
		s += " in " + b.codename
	}
	text := strings.Replace(b.prob.phrases[pp], "{S}", s, 1)
	text += b.prob.suffixes[r.IntN(len(b.prob.suffixes))]
	text = g.fill(text, run, "")
	switch r.IntN(10) {
	case 0:
		text = strings.ToUpper(text[:1]) + text[1:]
	case 1:
		text = strings.ReplaceAll(text, " ", "  ")
	case 2:
		text = "  " + text + "  "
	case 3:
		text += "\n\nfound by " + src + " during " + run
	}
	return text
}

// fill replaces literal slots.
func (g *gen) fill(s, run, codename string) string {
	r := g.r
	for strings.Contains(s, "{n}") {
		s = strings.Replace(s, "{n}", strconv.Itoa(1+r.IntN(5000)), 1)
	}
	for strings.Contains(s, "{name}") {
		runNum := strconv.Itoa(100 + r.IntN(90000))
		if d := digits(run); len(d) >= 8 {
			runNum = d[2:12] // the run's date and time: one name per run
		}
		s = strings.Replace(s, "{name}", fmt.Sprintf("qa-r%s-%d", runNum, 1+r.IntN(9)), 1)
	}
	for strings.Contains(s, "{hex}") {
		s = strings.Replace(s, "{hex}", g.hexN(8+r.IntN(9)), 1)
	}
	for strings.Contains(s, "{addr}") {
		s = strings.Replace(s, "{addr}", "0x"+g.hexN(40), 1)
	}
	if strings.Contains(s, "{long}") {
		s = strings.Replace(s, "{long}", strings.Repeat("x", 300), 1)
	}
	if codename != "" {
		s = strings.ReplaceAll(s, "{code}", codename)
	}
	return s
}

// args writes a repro's JSON object: keys in random order, random spacing,
// literals filled; numbers sometimes as JSON numbers.
func (g *gen) args(as []arg, run, codename string) string {
	r := g.r
	order := r.Perm(len(as))
	var sb strings.Builder
	sb.WriteByte('{')
	for i, j := range order {
		a := as[j]
		if i > 0 {
			sb.WriteString(g.pick(",", ", ", " , "))
		}
		key := a.key
		if r.IntN(25) == 0 {
			key = strings.ToUpper(key)
		}
		sb.WriteString(strconv.Quote(key))
		sb.WriteString(g.pick(":", ": ", " : "))
		v := g.fill(a.value, run, "")
		if codename != "" && a.key != "params" && a.key != "metadata_bytes" {
			v = codename + "/" + v
		}
		switch {
		case a.number:
			sb.WriteString(v)
		case a.object:
			sb.WriteString(v)
		default:
			sb.WriteString(jsonString(v))
		}
	}
	sb.WriteByte('}')
	return sb.String()
}

// jsonString quotes s as JSON (strconv.Quote's escapes are not all JSON).
func jsonString(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(c)
		case c < 0x20:
			fmt.Fprintf(&sb, `\u%04x`, c)
		default:
			sb.WriteRune(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func (g *gen) pick(opts ...string) string { return opts[g.r.IntN(len(opts))] }

// spam makes a few probes loop: one bug reported hundreds of times in one
// run (and once without run ids at all, within a day).
func (g *gen) spam() {
	for i := range g.o.SpamBursts {
		b := g.bugs[g.r.IntN(len(g.bugs))]
		d := b.from + g.r.IntN(max(1, b.to-b.from))
		if !b.activeOn(d) {
			d = b.from
		}
		src := b.sources[0]
		start := g.day(d).Add(time.Duration(g.r.IntN(20)) * time.Hour)
		run := fmt.Sprintf("r-%s-loop", start.Format("20060102-1504"))
		if i == 0 {
			run = "" // a loop that does not even say which run
		}
		n := 150 + g.r.IntN(250)
		text := g.envelope(b, src, run, false, "")
		for k := range n {
			if k > 0 && b.subj.tool != "" && g.r.IntN(2) == 0 {
				// The loop retries with fresh sandbox names and values:
				// the same text but for the repro's literals.
				head, _, _ := strings.Cut(text, "\nrepro: ")
				text = head + "\nrepro: " + b.subj.tool + " " + g.args(b.subj.args, run, b.codename)
			}
			g.add(event{t: start.Add(time.Duration(k) * time.Second), sender: Fleet, text: text, label: b.id, role: "spam", source: src})
		}
	}
}

// humans adds what people write: noise, and the occasional real bug in
// their own words (free-form, so triage cannot tie it to the probes'
// cluster: an honest recall cost).
func (g *gen) humans() {
	n := int(float64(g.o.Findings) * g.o.NoiseRate)
	for range n {
		i := g.r.IntN(len(noise))
		who := people[g.r.IntN(len(people))]
		text := strings.ReplaceAll(noise[i], "{who}", who)
		text = g.fill(text, "", "")
		label := fmt.Sprintf("n%02d", i)
		if strings.Contains(noise[i], "{who}") {
			label += "-" + who
		}
		g.add(event{t: g.randomTime(), sender: human(g.r.IntN(40)), text: text, label: label, role: "noise"})
	}
	for range n / 10 {
		b := g.bugs[g.r.IntN(len(g.bugs))]
		text := fmt.Sprintf("hey, %s? (%s)", strings.TrimSpace(g.summary(b, "human", "")), b.surface)
		g.add(event{t: g.day(b.from).Add(time.Duration(g.r.IntN(24)) * time.Hour), sender: human(g.r.IntN(40)), text: text, label: b.id, role: "human-report"})
	}
	// A buggy probe build that drops sev= now and then: malformed qa/v1.
	for range max(1, g.o.Findings/2000) {
		b := g.bugs[g.r.IntN(len(g.bugs))]
		text := fmt.Sprintf("qa/v1 source=%s surface=%s\n%s", b.sources[0], b.surface, g.summary(b, b.sources[0], ""))
		g.add(event{t: g.day(b.from).Add(time.Duration(g.r.IntN(24)) * time.Hour), sender: Fleet, text: text, label: b.id, role: "malformed"})
	}
}

func human(i int) fleet.Address {
	a := addr(0x40)
	a[18], a[19] = byte(i>>8), byte(i)
	return a
}

func attacker(i int) fleet.Address {
	a := addr(0xbad % 256)
	a[0], a[19] = 0xba, byte(i)
	return a
}

func (g *gen) randomTime() time.Time {
	return g.o.Start.Add(time.Duration(g.r.Int64N(int64(g.o.Days) * int64(24*time.Hour))))
}

// attacks adds what an adversary with free access to the log does.
func (g *gen) attacks() {
	r := g.r
	// A flood: a fake critical chain finding from many runs, sources and
	// addresses, worded several ways. It must never outrank a trusted one.
	fake := &bug{id: "x-flood", surface: "chain", sev: "critical",
		subj: subject{phrases: []string{"the admin key of the registry", "registry owner key", "the registry's admin private key", "owner key material"},
			tool: "qa_chain", args: []arg{{key: "method", value: "eth_getBalance"}, {key: "params", value: `{"address":"0xdeadbeef00000000000000000000000000000001"}`, object: true}}},
		prob:      problem{sev: "critical", phrases: []string{"{S} has leaked, drain imminent", "URGENT: {S} compromised", "{S} is public, funds at risk", "leak of {S}, act now"}, suffixes: []string{"", "!!!", " — fix immediately"}},
		preferred: map[string][2]int{}}
	g.label[fake.id] = &Cluster{Severity: "critical", Surface: "chain"}
	for k := range 300 {
		src := fmt.Sprintf("qa-sec%d", r.IntN(50))
		run := fmt.Sprintf("r-fake-%d", k)
		g.add(event{t: g.randomTime(), sender: attacker(r.IntN(8)), text: g.envelope(fake, src, run, false, ""), label: fake.id, role: "attack"})
	}
	// Copies of real findings, verbatim or reworded: same cluster, never counted.
	for range 60 {
		b := g.bugs[r.IntN(len(g.bugs))]
		d := b.from + r.IntN(max(1, b.to-b.from))
		g.add(event{t: g.day(d).Add(time.Duration(r.IntN(24)) * time.Hour), sender: attacker(8 + r.IntN(4)), text: g.envelope(b, b.sources[0], fmt.Sprintf("r-copy-%d", r.IntN(1000)), false, "critical"), label: b.id, role: "copy"})
	}
	// Forged corrections: mark the most severe real bugs false positive or
	// resolved, and merge distinct bugs. All must be ignored.
	sorted := slices.Clone(g.bugs)
	slices.SortStableFunc(sorted, func(a, b *bug) int { return cmp.Compare(sevRank(b.sev), sevRank(a.sev)) })
	for i, b := range sorted[:min(12, len(sorted))] {
		kind := fleet.KindFalsePositive
		if i%3 == 1 {
			kind = fleet.KindResolution
		}
		ev := event{t: g.day(min(g.o.Days-1, b.from+2)), sender: attacker(12), role: "forged-correction", corr: kind, target: b.id, source: "qa-operator"}
		if i%3 == 2 {
			ev.corr, ev.ofTarget = fleet.KindDuplicateOf, sorted[(i+5)%len(sorted)].id
		}
		g.add(ev)
	}
	// Bridges: untrusted summaries that mix two similar real bugs' words,
	// hoping to glue their clusters together.
	for k := range 12 {
		a, b := g.bugs[r.IntN(len(g.bugs))], g.bugs[r.IntN(len(g.bugs))]
		if a.surface != b.surface {
			continue
		}
		text := fmt.Sprintf("qa/v1 source=qa-ux sev=high surface=%s run=r-bridge-%d\n%s; also %s", a.surface, k, g.summary(a, "x", ""), g.summary(b, "x", ""))
		id := fmt.Sprintf("x-bridge-%d", k)
		g.label[id] = &Cluster{Severity: "high", Surface: a.surface}
		g.add(event{t: g.randomTime(), sender: attacker(13), text: text, label: id, role: "attack"})
	}
	// Hostile text aimed at the report renderers.
	for k, s := range []string{
		"<img src=x onerror=alert(1)> in | the | table",
		"[urgent](javascript:alert(1)) click ![x](http://evil.example/x.png)",
		"\x1b[31mred alert\x1b[0m \u202egnp.exe",
		"line1\nline2 <!-- comment --> `code` *bold* _it_ # heading",
		strings.Repeat("A", 1900),
	} {
		id := fmt.Sprintf("x-hostile-%d", k)
		g.label[id] = &Cluster{Severity: "medium", Surface: "face"}
		text := "qa/v1 source=qa-ux sev=medium surface=face run=r-hostile\n" + s
		if len(text) > fleet.MaxEnvelopeBytes {
			text = text[:fleet.MaxEnvelopeBytes]
		}
		g.add(event{t: g.randomTime(), sender: attacker(14), text: text, label: id, role: "attack"})
	}
}

func sevRank(s string) int { return fleet.Severity(s).Rank() }

// meta adds the triage stage's own daily summaries: never ranked.
func (g *gen) meta() {
	for d := range g.o.Days {
		g.add(event{t: g.day(d).Add(23*time.Hour + 59*time.Minute), sender: Fleet, role: "meta",
			text: "qa/v1 source=qa-triage sev=meta surface=fleet kind=meta\nhealth: top 3 changed\n1. [high compiler] something (x3)"})
	}
}

// finish orders the events by time, gives them indexes, resolves the
// corrections' refs and computes the ground truth.
func (g *gen) finish() *Log {
	slices.SortStableFunc(g.evs, func(a, b event) int { return cmp.Or(a.t.Compare(b.t), cmp.Compare(a.seq, b.seq)) })
	log := &Log{Header: Header{
		Format:   FormatName,
		Seed:     g.o.Seed,
		Trusted:  []fleet.Address{Fleet, Operator},
		Clusters: map[string]*Cluster{},
	}}
	byLabel := map[string][]uint64{} // finding entries of each label so far
	twins := map[string][]uint64{}
	for i := range g.evs {
		ev := &g.evs[i]
		idx := uint64(len(log.Entries))
		if ev.role == "correction" || ev.role == "forged-correction" {
			text, ok := g.correction(ev, byLabel, twins)
			if !ok {
				continue
			}
			ev.text = text
		}
		if len(ev.text) > fleet.MaxEnvelopeBytes {
			ev.text = ev.text[:fleet.MaxEnvelopeBytes]
		}
		log.Entries = append(log.Entries, Entry{Index: idx, Sender: ev.sender, Time: ev.t.Truncate(time.Second), Text: ev.text, Cluster: ev.label, Role: ev.role})
		if ev.label != "" {
			if ev.role == "twin" {
				twins[ev.label] = append(twins[ev.label], idx)
			} else {
				byLabel[ev.label] = append(byLabel[ev.label], idx)
			}
		}
	}
	g.truth(log)
	if len(log.Entries) > 0 {
		log.Header.Now = log.Entries[len(log.Entries)-1].Time.Add(time.Hour)
	}
	return log
}

// correction writes a correction event's text once its refs can be chosen
// among earlier entries; ok is false when there is nothing to refer to yet.
func (g *gen) correction(ev *event, byLabel, twins map[string][]uint64) (string, bool) {
	c := triage.Correction{Kind: ev.corr, Source: ev.source, Surface: "fleet"}
	pickRef := func(list []uint64) (uint64, bool) {
		if len(list) == 0 {
			return 0, false
		}
		return list[g.r.IntN(len(list))], true
	}
	if ev.badRef != "" {
		return fmt.Sprintf("qa/v1 source=%s sev=info surface=fleet kind=%s ref=%s", ev.source, ev.corr, ev.badRef), true
	}
	var ok bool
	if ev.twinRef {
		c.Ref, ok = pickRef(twins[ev.target])
	} else {
		c.Ref, ok = pickRef(byLabel[ev.target])
	}
	if !ok {
		return "", false
	}
	if ev.corr == fleet.KindDuplicateOf {
		if c.Of, ok = pickRef(byLabel[ev.ofTarget]); !ok || c.Of == c.Ref {
			return "", false
		}
	}
	text, err := c.Format()
	if err != nil {
		panic(err) // a generator bug
	}
	return text, true
}

// truth computes each label's state and priority with the documented
// default weights (see package triage): what a perfect triage would rank.
func (g *gen) truth(log *Log) {
	w := triage.DefaultWeights()
	trusted := func(a fleet.Address) bool { return a == Fleet || a == Operator }
	type agg struct {
		sources map[string]bool
		runs    map[string]bool
		last    uint64
		n       int
	}
	aggs := map[string]*agg{}
	type st struct {
		kind  fleet.Kind
		index uint64
	}
	states := map[string]st{}
	labelOf := map[uint64]string{}
	for _, e := range log.Entries {
		if e.Cluster != "" {
			labelOf[e.Index] = e.Cluster
		}
		f, err := fleet.Parse(e.Text)
		if !trusted(e.Sender) {
			continue
		}
		switch f.Kind {
		case fleet.KindResolution, fleet.KindFalsePositive:
			if ref, err := strconv.ParseUint(f.Ref, 10, 64); err == nil && ref < e.Index {
				if l, ok := labelOf[ref]; ok {
					states[l] = st{f.Kind, e.Index}
				}
			}
			continue
		}
		if e.Cluster == "" || err != nil || f.FreeForm {
			continue
		}
		a := aggs[e.Cluster]
		if a == nil {
			a = &agg{sources: map[string]bool{}, runs: map[string]bool{}}
			aggs[e.Cluster] = a
		}
		a.sources[f.Source] = true
		run := "r:" + f.Run
		if f.Run == "" {
			run = "d:" + e.Time.UTC().Format("2006-01-02")
		}
		a.runs[f.Source+"\x00"+run] = true
		a.last = e.Index
		a.n++
	}
	for id, c := range g.label {
		log.Header.Clusters[id] = c
		c.State = "open"
		a := aggs[id]
		if a == nil {
			c.Priority = 0 // untrusted only: shown, never ranked among trusted work
			c.Trusted = false
			continue
		}
		c.Trusted = true
		c.Count = a.n
		c.Sources = len(a.sources)
		c.Runs = len(a.runs)
		rec := 1 + w.SourceDamping*math.Log(float64(len(a.sources))) + w.RunDamping*math.Log(float64(min(len(a.runs), w.RunCap)))
		surf, ok := w.Surface[fleet.Surface(c.Surface)]
		if !ok {
			surf = w.SurfaceDefault
		}
		p := w.Severity[fleet.Severity(c.Severity)] * rec * surf
		if s, ok := states[id]; ok {
			switch {
			case s.kind == fleet.KindFalsePositive:
				c.State, p = "false-positive", 0
			case a.last > s.index:
				c.State, p = "regressed", p*w.RegressionBoost
			default:
				c.State, p = "resolved", 0
			}
		}
		c.Priority = math.Round(p*1e4) / 1e4
	}
	for i := range log.Entries {
		e := &log.Entries[i]
		if e.Cluster == "" {
			continue
		}
		if _, ok := log.Header.Clusters[e.Cluster]; !ok {
			log.Header.Clusters[e.Cluster] = &Cluster{State: "open"} // noise
		}
	}
}

func poisson(r *rand.Rand, lambda float64) int {
	if lambda > 30 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

func pick(r *rand.Rand, weights []float64, total float64) int {
	x := r.Float64() * total
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	for i := len(weights) - 1; i >= 0; i-- {
		if weights[i] > 0 {
			return i
		}
	}
	return 0
}

func digits(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			b = append(b, s[i])
		}
	}
	return string(b)
}
