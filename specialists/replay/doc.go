// Package replay is what the specialists' checks are written against: the
// replay engine that runs a playbook's program (Replay) and the Play it
// hands the program. A Play makes the program's tool calls (Call, Fetch,
// Compile, Chain, Create, Publish, Agent; Wait pauses before the next one,
// Stop ends the run with the program's error), keeps it within the run
// (Has, Can, Room, Cap), files its findings (File; FileChecked files a high
// one only once its repro reproduces) and crawls the platform's web
// surface once per replay (Crawl, Get, FreshName), rendering its HTML pages
// in a browser when the run has one (Renderer, Renders: the rendering
// crawl, kept per run so every replay reads the same renders; Render,
// Rendered, Endpoints, Forms).
//
// Beside it sits the vocabulary every check shares: accessors of tool
// results (Str, Status, Body, Headers, ...), text for summaries (Quote,
// OneLine, Clip), the target's URLs (AllowedURL, SurfaceOf,
// TargetOrigins), the secret and leak scanners (ScanSecrets, ScanLeaks)
// and Memo, the cache that keeps replaying cheap. The secret scanner lives
// here rather than in a package of its own because File redacts every
// summary with it: no finding a check files can repeat a credential.
//
// The replay design, the reporting rules and the crawl are described in
// package specialists, whose playbooks are the programs replayed here. The
// import rule places replay below the check packages (inject, redteam,
// fuzzstage) and the playbooks: it imports fleet and crawl only.
package replay
