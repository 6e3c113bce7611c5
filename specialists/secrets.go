package specialists

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// secRenderedSecrets runs the secret scan on the rendered DOM of every
// page and reports the secrets no fetched response holds as served: a
// value the page's scripts assemble or decode in the browser. There is no
// tool call that replays it (qa_fetch shows the served page), so the
// finding is filed at medium and says so, as an unreplayed finding is.
func secRenderedSecrets(p *replay.Play) {
	served := map[string]bool{}
	for _, pg := range p.Crawl() {
		for _, s := range replay.ScanSecrets(replay.Body(pg.Res)) {
			served[s.Kind+s.Prefix] = true
		}
	}
	for _, rp := range p.Rendered() {
		var fresh []string
		for _, s := range immediateSecrets(rp.R.HTML) { // keys are secKeys' to verify
			if d := s.Describe(); !served[s.Kind+s.Prefix] && !slices.Contains(fresh, d) {
				fresh = append(fresh, d)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		p.File(fleet.SeverityMedium, replay.SurfaceOf(p.Target(), rp.URL),
			fmt.Sprintf("%s shows %d secret(s) once a browser runs its scripts, in no response as served: %s. Anyone who opens it can read them; rotate the credential. (Seen only in the rendered DOM: no tool call replays it, so filed at medium.)",
				replay.DescribePage(rp.Page), len(fresh), strings.Join(replay.First(fresh, 4), "; ")), "", nil)
	}
}

// exposedPath is a commonly exposed file and how to recognize the real
// thing (a soft-404 page that answers 200 for every path must not count).
type exposedPath struct {
	path string
	what string
	sig  *regexp.Regexp // nil: only a secret in it is a finding
}

// exposedPaths is the short, generic list probed on every allowlisted host
// of the target: deployment secrets, VCS metadata, cloud credentials,
// runtime debug endpoints and backups.
var exposedPaths = []exposedPath{
	{"/.env", "environment file", regexp.MustCompile(`(?m)^[A-Z][A-Z0-9_]{2,}=\S`)},
	{"/.git/config", "git repository metadata", regexp.MustCompile(`\[core\]|repositoryformatversion`)},
	{"/.aws/credentials", "cloud credentials file", regexp.MustCompile(`aws_access_key_id|aws_secret_access_key`)},
	{"/config.json", "configuration file", nil},
	{"/debug/vars", "runtime debug variables", regexp.MustCompile(`"memstats"\s*:|"cmdline"\s*:`)},
	{"/server-status", "server status page", regexp.MustCompile(`Apache Server Status|Server uptime|Total Accesses`)},
	{"/backup.zip", "backup archive", regexp.MustCompile(`^PK\x03\x04`)},
	{"/keys", "key listing", nil},
}

// secPages is the crawl plus the commonly exposed paths on the first
// secHosts origins, each URL once.
func secPages(p *replay.Play) []replay.Page {
	if !p.Can("qa_fetch") {
		p.Skip("qa_fetch unavailable: pages, secrets, stored XSS, headers and CORS not checked")
		return nil
	}
	pages := slices.Clone(p.Crawl())
	for _, o := range replay.First(replay.TargetOrigins(p.Target()), secHosts) {
		for _, e := range exposedPaths {
			url := o + e.path
			if _, done := p.PageAt(url); done {
				continue // the crawl met it: its page is already in the list
			}
			if r, ok := p.Get(url); ok {
				pages = append(pages, replay.Page{URL: url, Kind: "exposed", Res: r})
			}
		}
	}
	return pages
}

// secSecrets reports credentials on any fetched page (one finding per
// page) and exposed files recognized by their content. A page holding a
// key that could control an account is secKeys' to judge, with the page's
// other secrets in the same finding.
func secSecrets(p *replay.Play, pages []replay.Page, fns []surfFn) {
	reported := 0
	known := map[string]bool{} // kind and prefix of secrets already reported
	repeats := 0
	var keyPages []keyPage
	defer func() {
		if repeats > 0 {
			p.Notef("%d more page(s) repeat a secret already reported", repeats)
		}
		secKeys(p, append(keyPages, renderedKeyPages(p, keyPages)...), fns)
	}()
	for _, pg := range pages {
		if !replay.Answered(pg.Res) {
			continue
		}
		found := immediateSecrets(replay.Body(pg.Res))
		if len(chainKeys(replay.Body(pg.Res))) > 0 {
			keyPages = append(keyPages, keyPage{page: pg, found: found})
			continue
		}
		fresh := false
		for _, s := range found {
			fresh = fresh || !known[s.Kind+s.Prefix]
		}
		if len(found) > 0 && !fresh {
			// The same secrets again (a page served at many paths): one
			// exposure, reported once.
			repeats++
			continue
		}
		for _, s := range found {
			known[s.Kind+s.Prefix] = true
		}
		if len(found) > 0 && reported < secSecretFindings {
			reported++
			sev := fleet.SeverityHigh
			var kinds []string
			for _, s := range found {
				if s.Sev == fleet.SeverityCritical {
					sev = fleet.SeverityCritical
				}
				if d := s.Describe(); !slices.Contains(kinds, d) && len(kinds) < 4 {
					kinds = append(kinds, d)
				}
			}
			first := found[0]
			p.FileChecked(sev, replay.SurfaceOf(p.Target(), pg.URL),
				fmt.Sprintf("Public URL %s (HTTP %d) exposes %d secret(s): %s. Anyone can read it; rotate the credential and remove it from public paths.",
					replay.DescribePage(pg), replay.Status(pg.Res), len(found), strings.Join(kinds, "; ")),
				"qa_fetch", map[string]any{"url": pg.URL},
				func(r fleet.Result) bool { return replay.HoldsSecret(replay.Body(r), first) })
			continue
		}
		if pg.Kind != "exposed" || replay.Status(pg.Res) != 200 {
			continue
		}
		for _, e := range exposedPaths {
			if strings.HasSuffix(pg.URL, e.path) && e.sig != nil && e.sig.MatchString(replay.Body(pg.Res)) {
				p.File(fleet.SeverityMedium, "web",
					fmt.Sprintf("A %s is publicly readable at %s (HTTP 200, content matches). Expected 404 or 403 for deployment files.", e.what, pg.URL),
					"qa_fetch", map[string]any{"url": pg.URL})
			}
		}
	}
}
