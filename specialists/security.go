package specialists

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/specialists/authz"
	"github.com/qafleet/fleetd/specialists/inject"
	"github.com/qafleet/fleetd/specialists/redteam"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Security limits.
const (
	secAdmin          = 8 // admin functions simulated
	secDocs           = 4 // docs pages
	secNames          = 4 // public names' faces
	secHosts          = 2 // hosts probed for exposed paths
	secLinks          = 8 // same-host links followed from docs and index pages
	secSecretFindings = 5 // secret findings per run
)

// security probes trust boundaries; see the package doc for each rule.
// The passive rules run on every page the crawl found (Probe.Crawl) plus the
// commonly exposed paths; the active ones follow.
func security(p *replay.Play, o Options) {
	secAdminFunctions(p)
	pages := secPages(p)
	fns := secRegistrySurface(p, pages, o.ABIs) // every selector in the registry's bytecode, named or not
	secSecrets(p, pages, fns)                   // keys among them verified against the chain
	secInvariants(p, o.properties(), fns)       // properties over simulated call sequences
	secHeaders(p, pages)
	secCORS(p, pages)
	secMixedContent(p, pages)
	secBrowserReports(p)                  // CSP violations and mixed content the browser reported
	secRenderedSecrets(p)                 // secrets only the rendered DOM shows
	own, wrote := inject.Stored(p, pages) // stored injection per field and context; own: the name it probed with
	var spoofed []string                  // identity names the call endpoint trusts
	ids := platformIDs(p, pages)          // the platform's own identities, read once a claim is sent
	if target, ok := secCallXSS(p); ok {  // the run's canary reflected by the call endpoint
		spoofed = secSpoof(p, target, pages, ids) // spoofed identity, where the call endpoint answers
	}
	spoofed = append(spoofed, secSpoofQuery(p, pages, ids)...) // the same on the JSON endpoints the crawl fetched
	secStoredXSS(p, o.Corpus, own)                             // the canary published to a fresh name, when inject.Stored minted none
	signedIn := authz.Run(p, pages)                            // behind a SIWE login: two fresh identities (issue 33)
	secSpoofSignedIn(p, pages, signedIn, spoofed)
	// The rendering crawl behind the login, and stored XSS there.
	secSignedInStored(p, pages, signedIn)
	inject.Reflected(p, pages)        // reflected injection and path handling
	secDOMXSS(p)                      // URL canaries run in the browser
	byBrowser := secDOMXSSForms(p)    // forms submitted in the browser with canaries
	secPostForms(p, pages, byBrowser) // forms submitted over HTTP, the rest named in a note
	secStoredDOM(p)                   // canaries in stored fields the pages read back, run in the browser
	secStoredDOMName(p, own, wrote)   // the same for the fresh name's metadata on its face
	redteam.Run(p, o.Families, own)   // the agent endpoint's own attack class
	p.UndoWrites()                    // delete what the run's POSTs created; list what stays
}

// runCanary returns this run's canary: a unique token inside a script element
// and an event handler, with no quotes or backslashes so it fits in any
// string literal. Both would run where served unescaped, and both only
// call a function named by the token if one is defined (self.TOKEN?.()):
// none is, so in a visitor's browser the canary does nothing (no
// exception, no request, no dialog).
func runCanary(p *replay.Play) (token, text string) {
	token = fmt.Sprintf("qa%08x", uint32(p.Seed()>>11))
	return token, fmt.Sprintf("qa-canary %s<script>self.%s?.()</script><details open ontoggle=self.%s?.()>", token, token, token)
}

// reflectsRaw reports whether text holds the canary's markup unescaped.
func reflectsRaw(text, token string) bool {
	return strings.Contains(text, "<script>self."+token) || strings.Contains(text, "ontoggle=self."+token)
}
