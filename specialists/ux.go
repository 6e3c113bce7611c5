package specialists

import (
	"regexp"
	"slices"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/authz"
	"github.com/qafleet/fleetd/specialists/replay"
)

// UX limits.
const (
	uxHosts        = 2  // hosts probed with a bogus path
	uxNames        = 4  // public names called
	uxClaims       = 12 // documented endpoints checked against their docs
	uxDeadFindings = 5
	uxLeakFindings = 4
	uxTypeFindings = 3
)

// unknownName is a name no platform should have. It is fixed rather than
// seeded by the run so that the same leak found by every run groups into
// one fingerprint.
const unknownName = "qa-no-such-name-0"

// missingPage is a path no platform should serve, fixed for the same reason.
const missingPage = "qa-no-such-page"

// probeToken matches the names and paths above as they show up in an
// error (possibly with an extension added), so one leak reached through
// several of them is recognized as one.
var probeToken = regexp.MustCompile(`qa-no-such-[a-z0-9-]+(?:\.[a-z0-9]+)*`)

// uxRun is one ux session's memory: what was reported.
type uxRun struct {
	p     *replay.Play
	dead  map[string]bool // URLs already reported as dead or broken
	leaks int
	deads int
	types int
	// leakSigs are the leaks reported so far, by kind and normalized text.
	leakSigs map[string]bool
	calls    map[string]fleet.Result // qa_call results by canonical args
	// login is the sign-in the docs (or target.auth) describe: a
	// documented endpoint that refuses a caller without a session is
	// behind it, not short of credentials the docs hide.
	login authz.Flow
}

// ux checks the platform as a user or an agent meets it; see the package
// doc. Every check that reads pages runs on every page the crawl found.
func ux(p *replay.Play, _ Options) {
	u := &uxRun{p: p, dead: map[string]bool{}, leakSigs: map[string]bool{}, calls: map[string]fleet.Result{}}
	if p.Can("qa_fetch") {
		pages := p.Crawl()
		u.login = authz.Learn(pages, p.Target().Auth)
		u.deadDocs(pages) // configured docs pages that do not answer
		u.contract(pages)
		u.deadLinks(pages)
		u.contentTypes(pages)
		u.errorPaths() // before pageLeaks: a leak both show is named by its probe
		u.pageLeaks(pages)
		u.renderedErrors() // what the rendering crawl saw break
		u.renderedLeaks()  // internals only the rendered DOM shows
	} else {
		p.Skip("qa_fetch unavailable: docs, links and error pages not checked")
	}
	u.replies()
}

// get fetches url once per run (see Probe.Get).
func (u *uxRun) get(url string) (fleet.Result, bool) { return u.p.Get(url) }

// agent is qa_call, once per distinct request in this run.
func (u *uxRun) agent(a replay.CallArgs) (fleet.Exchange, bool) {
	key := string(replay.Canonical(replay.Marshal(a)))
	if r, ok := u.calls[key]; ok {
		return fleet.Exchange{Result: r}, true
	}
	if !u.p.Can("qa_call") || !u.p.Room(1) {
		return fleet.Exchange{}, false
	}
	ex := u.p.Exchange("qa_call", a)
	u.calls[key] = ex.Result
	return ex, true
}

// isDocPage reports whether a crawled page is documentation: a configured
// docs page, or a markdown or plain-text page.
func (u *uxRun) isDocPage(url string) bool {
	if slices.Contains(u.p.Target().Docs, url) {
		return true
	}
	r, ok := u.p.PageAt(url)
	if !ok {
		return false
	}
	k := crawl.Sniff(url, replay.Str(r, "content_type"), replay.Body(r))
	return k == crawl.KindMarkdown || k == crawl.KindText
}

// onFace reports whether url is the face of a public or fresh name: user
// content, whose broken links are its author's, not the platform's.
func (u *uxRun) onFace(url string) bool {
	if replay.NameOfFace(u.p.Target(), url) != "" {
		return true
	}
	name, _ := u.p.Minted()
	return name != "" && u.p.Target().FaceURL(name) == url
}
