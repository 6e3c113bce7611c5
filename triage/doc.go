// Package triage reads the whole feedback log, clusters its findings, ranks
// the clusters and writes the health report operators read every morning
// (DESIGN.md §9). Its input is permissionless text: it is built to be right
// on honest input and hard to fool on hostile input.
//
// # Reading
//
// A Triage keeps its state in <data_dir>/triage (Store): a cache of every
// entry read so far (binary records with CRCs, synced before anything
// refers to them; a torn tail is moved aside and cut off), checkpoints
// (next index, block number, block hash) and the meta-summary state. Sync
// first checks that the newest checkpoint's block is still canonical; after
// a reorg it falls back to the newest checkpoint that is, drops the cached
// entries after it, rebuilds the engine and reads again from there. It then
// reads the new entries through Chain.Scan (feedbackRange pages, all at one
// block), caches them, feeds them to the Engine and records a checkpoint.
//
// # Parsing and trust
//
// Entries are parsed with fleet.Parse. Text that is not qa/v1 is a free-form
// finding with severity unknown; a malformed envelope is free-form too and
// counted in fleet.ReportTotals.Malformed. Entries with sev=meta or
// kind=meta (triage's own summaries among them) are never ranked.
//
// Senders in Config.Trusted are trusted (chain.trusted_senders; cmd should
// add the fleet identity that signs operator corrections). Everyone else is
// shown, flagged and kept at arm's length:
//   - a cluster's counts, severity, runs, sources, state and title come from
//     its trusted findings whenever it has any; untrusted copies are only
//     counted in fleet.Cluster.Untrusted, so they never raise a trusted
//     cluster's score;
//   - clusters only untrusted senders reported rank after every active
//     trusted one, whatever their claimed severity, and never become work
//     items (WorkItems) or reach the meta summary;
//   - corrections from untrusted senders are ignored
//     (fleet.ReportTotals.CorrectionsIgnored);
//   - untrusted text may join a cluster but is never indexed for others to be
//     matched against, so it cannot bridge two clusters, and word weights are
//     computed from trusted text only;
//   - an untrusted source's recurrence counts its sender addresses, not the
//     source= labels it can make up.
//
// # Clustering
//
// Every finding gets a literal key: its surface plus, with a crash state
// (state=, fleet.KeyState: the bug rather than the input that showed it),
// that state verbatim; else, with a repro, the normalized repro (fleet.NormalizeRepro: tool, JSON args with keys sorted,
// whitespace removed, lowercased), else the normalized summary
// (fleet.NormalizeSummary), with literals replaced by '#': a number, an
// 0x-hex word (an address or hash), a word of four or more hex digits with
// a decimal digit (a5c1e0a9), and every digit run inside other words
// (qa-r123-4 -> qa-r#-#, 850ms -> #ms). A 4-byte selector (0x + 8 hex) and
// the selector heading ABI calldata are kept: which function a repro calls
// is part of the bug. Quoted strings and code are kept (enum E{} and
// struct S{} are different bugs). Findings with equal literal keys are one
// cluster; equal fingerprints (fleet.Fingerprint) imply equal literal keys.
// Before that, a finding's written key, the same text as written (not
// normalized) with its literals replaced, is looked up: findings with equal
// written keys are one cluster too, the first one's. Normalizing can tell
// two of them apart (lowercased, D4691 becomes a hex literal while D12
// stays a word with a digit run); the first decides for both. No written
// key is ever forgotten, so every placement is a function of the log, the
// same in every process.
//
// A finding whose literal key is new and that is not free-form is matched
// against the clusters of its surface by its summary's headline (first
// line): words lowercased, literals replaced, stopwords dropped, QA
// synonyms folded (panics/crashed -> crash, outdated/"out of date" -> stale,
// ...) and suffixes stemmed. It joins the cluster holding the most similar
// summary when
//   - the IDF-weighted Jaccard similarity (w = 1 + ln((N+1)/(df+1)) over
//     the surface's trusted summaries) is at least Config.MergeThreshold
//     (default 0.55; chosen on the generator's logs, see labelgen),
//   - its similarity to the cluster's first summary is at least half that
//     (no drifting along chains of small rewordings),
//   - it is not the same template as any of the cluster's summaries with
//     other specifics filled in: same words before and after, and disjoint
//     words between that are at least as rare as the shared ones (the
//     register path vs the publish path; "p95 of POST /call" vs "of POST
//     /publish"),
//   - it does not differ from the summary it matched by a pair of rivals or
//     by a specific (below),
//   - and, when it has a repro, the cluster has none yet (a repro names one
//     bug; another repro is another bug, whatever the wording).
//
// Otherwise it starts a new cluster. A trusted repro-less summary with the
// same token sequence as one placed before (other case, punctuation,
// literals or detail lines) takes that one's cluster without a query, and
// one wording is indexed once per cluster.
//
// Rivals and specifics are what tells bugs apart at scale, where a surface
// holds hundreds of bugs of one kind in different places (the same dead
// link in another module's docs) and a paraphrase of one report can look
// more like another place's report than its own. They are learned from
// trusted summaries only: two tokens that fill one slot (the same tokens
// before and after) in summaries of different clusters are rivals (ibis and
// siskin; crash and hang); a token whose presence alone, inside the
// summary, is the difference between two clusters' summaries is a specific
// (kestrel in "kestrel-osprey" against "osprey").
//
// A trusted finding that matches two clusters, both passing every check
// above, bridges them: when neither is corrected, they hold no two repros,
// and their leading summaries are similar (at least half the threshold)
// and name no different things, the younger merges into the older (as a
// duplicate-of would; fleet.Cluster.Merged lists it). Reports of one bug
// in wordings that share few words meet this way once a report mixing them
// arrives; untrusted text never bridges. A trusted finding is matched against
// trusted summaries only. Candidates come from an inverted index with
// weighted prefix filtering (a summary with similarity ≥ t shares weight ≥
// t·|query|, so probing the heaviest words until the rest weighs less
// finds them all); at most the newest 256 postings per word are scanned and
// the 32 candidates sharing most weight are verified: rare words, probed
// first, have short lists, and the lists past 256 (at a million entries)
// belong to words every report in a surface shares. Every decision is taken when a finding
// arrives, from what came before it, so adding a log at once or in any
// slices gives the same clusters, and a cluster's id (the fingerprint of
// its first finding) is stable across runs and restarts.
//
// # Corrections
//
// A correction is a qa/v1 record whose ref= names an earlier entry by index,
// or a cluster by its id (16 hex digits, as the fix stage writes it), and
// applies to the cluster holding that entry (Correction, ParseMark):
//
//	qa/v1 source=qa-operator sev=info surface=fleet kind=false-positive ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=duplicate-of ref=12 of=7
//	qa/v1 source=qa-fixer sev=info surface=compiler kind=needs-repro ref=5c1e0a9d2b3f4a10
//	qa/v1 source=qa-fixer sev=info surface=compiler kind=resolution ref=5c1e0a9d2b3f4a10
//
//	qa/v1 source=qa-operator sev=info surface=fleet kind=unmerge ref=12
//	qa/v1 source=qa-operator sev=info surface=fleet kind=accepted-risk ref=12 until=2027-01-31T00:00:00Z
//	only reachable from the admin network
//
// duplicate-of folds the cluster of entry 12 into the cluster of entry 7.
// Of resolution, false-positive and accepted-risk the latest applies. A
// false positive stays one however often the same crash is reported
// again, and is regressed (State, StateReason) when a new crash state
// arrives with its repro, when a report reading like it arrives with a
// materially different repro (a dismissed cluster is the one anchored
// cluster another repro may join by similarity), or when a repro joins a
// cluster dismissed without one;
// a resolved cluster that a counted finding reports after its resolution
// is regressed; an accepted risk is open again once the report's time
// reaches its until=. unmerge ref=N splits entry N out of its cluster
// (applied when N arrives: see Engine.Stale and BuildEngine); unmerge
// ref=<cluster id> takes a place out of its folded row. Each cluster
// keeps the corrections applied to it (fleet.Cluster.Corrections). A ref that is
// not an earlier finding (a future index, a correction, a meta summary) is
// counted in fleet.ReportTotals.CorrectionsInvalid and changes nothing.
//
// # Ranking
//
//	score = severity weight × recurrence × surface criticality
//	recurrence = 1 + SourceDamping·ln(sources) + RunDamping·ln(min(runs, RunCap))
//
// over the counted findings, where sources are distinct (sender, source=)
// pairs and runs distinct (source, run=) pairs, a source's findings without
// run= in one UTC day counting as one run: a probe stuck in a loop, or one
// source posting in bursts, adds one run, not hundreds. A regressed cluster
// scores RegressionBoost (1.5) times what it would open, so it ranks above
// its old self; an untrusted-only cluster is scaled by Weights.Untrusted.
// DefaultWeights documents the defaults (severity 16/8/4/2/1, unknown 1;
// security and chain 3, registry 2.5, compiler 2, call and face 1.5,
// feedback 1.2, docs 1, perf 0.8, fleet 0.5, others 1). Rows are ordered
// by bucket (active trusted, active untrusted-only, resolved, false
// positive), then score, then the most recent report, then age.
//
// # One behaviour, one row
//
// A check that finds one flaw on every agent or page of a platform posts
// one finding per place; their clusters stay apart in the engine (a place
// is what ClusterOf, corrections and the labelled evaluation address), but
// Engine.Report folds the rows that are one behaviour at several places
// into one (foldPlaces). A row's place is the first of its repro's
// "target", "name" or "url" arguments; its behaviour is its surface,
// sources, repro tool, the repro's other arguments, and its title
// with the place (and a quoted name the place URL contains) masked, and
// numbers masked except a status or exit code (maskMeasures: a latency is
// a measurement, HTTP 500 against HTTP 404 is another behaviour). Rows with
// one behaviour at two or more places become the row of the place seen
// first, listing fleet.Cluster.Places (each place, its cluster, its count),
// with counts summed, the highest severity and score, and the other
// places' ids in Merged; it is ranked once and WorkItems gives it once. A
// correction of any place's entry is a correction of the behaviour, the
// latest applying (foldState): a false positive sticks when the behaviour
// shows up at a new place, a resolution regresses when any place is
// reported after it. Untrusted, free-form and repro-less rows never fold.
//
// # Reports
//
// Engine.Report ranks into a fleet.Report, the ranked result that the
// console, the MCP resources and the fix stage read too (its JSON schema,
// fleet.ReportSchema, is snake_case and only grows; the report types live in
// fleet so that every reader shares them); Render, RenderMarkdown, RenderTable and RenderJSON print it and
// WriteReport writes reports/latest.{md,json} and dated copies under
// reports/history. Triage.Run syncs, rewrites the files when anything
// changed, and posts one sev=meta source=qa-triage summary (MetaText)
// through a Poster when the top 3 trusted active clusters changed as a set
// of (id, state), never more often than Config.MetaEvery. WorkItems lists
// what the fix stage may take.
//
// Every string a report quotes from the log is untrusted data. The
// renderers neutralize it (MarkdownText: HTML entities, Markdown syntax
// escaped, URLs defanged, control and bidi characters dropped, length
// capped; MarkdownCode for repros; PlainText for terminals), and nothing in
// fleetd may hand it to a shell or a model prompt unquoted.
package triage
