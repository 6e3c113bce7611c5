// Package specialists holds the deterministic planners, one per specialist —
// smoke, security, fuzz, ux and perf — the offline default fleet.Model.
// They do real QA work through the same loop, dial gate, validation and run
// record as a model planner: a playbook never runs a tool itself, it only
// chooses the next call.
//
// # Layout
//
// The playbooks (New, Names, Options, the table of Specs) are here; the checks they compose
// live in sub-packages, all written against the probe API:
//   - probe: the replay engine (Replay) and the Probe a program calls
//     tools, files findings and crawls through, with the vocabulary every
//     check shares (result accessors, summaries, the secret and leak
//     scanners, the target's URLs);
//   - inject: stored and reflected injection, per HTML context;
//   - redteam: the agent probe families and their detectors;
//   - authz: the two-identity checks behind a Sign-In with Ethereum login;
//   - fuzzstage: the fuzz playbook's program and stages (call grammar,
//     compiler mutation, engines, the Go fuzz target, ddmin).
//
// The checks only one playbook runs stay here, one file per class of
// problem they find (below); smoke.go, security.go, ux.go and perf.go are
// the tables of contents, the order each playbook runs its checks in.
// The playbooks themselves are one table of specs (playbook.go: shipped,
// Spec; name, program, call cap, crawl and render budgets). The layers
// (layout_test.go) put probe below the checks and the checks below this
// package: a check imports probe, never another check nor this package,
// so only a playbook composes them.
//
// # Where each class is found
//
// Every class of problem the playbooks find, with the files that find it
// whatever the mechanism (crawl, browser, chain): a class always has a
// file or a sub-package named after it (TestDocClassFiles reads this list).
//   - smoke (a step of the main path that fails): smoke.go
//   - smoke reach (no answer: the target's outage or fleetd's own network): smoke_reach.go
//   - admin functions: admin_functions.go
//   - registry surface (a stranger changes the registry): registry_surface.go, abis.go
//   - verified keys (a key on a page that controls an account): verified_keys.go
//   - invariants (over simulated call sequences): invariants.go, invariants/
//   - secrets (pages, exposed paths, the rendered DOM): secrets.go
//   - stored XSS: stored_xss.go (secStoredXSS: a canary published to a fresh name), inject/inject.go (inject.Stored: per field and HTML context), stored_xss_dom.go (in the browser), stored_xss_signed_in.go (behind the login: identity a stores, identity b's browser runs it)
//   - reflected XSS: reflected_xss.go (secCallXSS: the call endpoint; secPostForms: POST forms over HTTP), inject/inject_reflect.go (inject.Reflected: URL parameters)
//   - reflected injection (open redirect, header injection, path traversal): inject/inject_reflect.go
//   - DOM XSS (URL canaries and forms, in the browser): dom_xss.go
//   - spoofed identity: spoofed_identity.go
//   - authorization behind a sign-in (authz): authz/
//   - agent attacks (redteam): redteam/
//   - headers: headers.go
//   - CORS: cors.go
//   - mixed content: mixed_content.go, csp_violations.go (secBrowserReports: as the browser reported it)
//   - CSP violations: csp_violations.go
//   - docs contract (an endpoint that does not do what the docs say): docs_contract.go
//   - leaked internals (raw and rendered): leaked_internals.go, empty_replies.go (uxRun.replies: the answer for an unknown target)
//   - dead links (and docs pages that do not answer): dead_links.go
//   - content types: content_types.go
//   - empty replies: empty_replies.go
//   - page errors (in the browser): page_errors.go
//   - latency: latency.go, stats.go
//   - compile growth: compile_growth.go, stats.go
//   - gas: gas.go
//   - crashes and hangs (fuzzstage: compiler, Go fuzz target, C/C++ harness, call endpoint): fuzzstage/
//
// What the run wrote and could not undo is listed, not found:
// left_on_platform.go. A run cut short before its program's end (the
// budget, the deadline, a tool's error, the kill switch) still deletes
// what its POSTs created, or lists it: Playbook.End, the loop's
// end-of-run calls (fleet.Ender), replays the program up to where the
// run ended and runs only replay.Play.UndoWrites from there.
//
// # Replay
//
// A playbook is straight-line Go code over a small probe API (Fetch,
// Compile, Chain, Agent, Create, Publish, Report, Skip). It is executed by
// replay: on every Next the program runs from the start; the i-th call
// returns the recorded result of State.History[i] (after checking that the
// recorded call is the same tool with the same arguments — if not, the run
// diverged and Next returns an error wrapping fleet.ErrMalformed), and the
// first call beyond the history stops the program and becomes the Step.
// When the program returns, Next returns Done with a summary of what ran,
// what was found and what was skipped and why. There are no goroutines and
// no hidden state: the transcript is the state, so the same history always
// yields the same next call. Randomness (fuzz mutations, the XSS canary)
// comes only from a PRNG seeded by the run id (or Options.Seed); the
// injection and agent canaries are seeded by the target instead, so the same
// flaw gives the same payload, summary and fingerprint every run. Scans of
// response bodies are memoized across replays; that saves work and cannot
// change a result.
//
// Playbooks adapt to refusals rather than reading the dial, because the dial
// can change during a run and a replay must take the path it took: a call
// the dial refuses comes back refused, the refusal names the dial, and
// every tool needing a higher rung is skipped from then on (one refused
// qa_create or qa_call at observe, then only observe-level checks). Tools
// not given to the run (the persona's tool list) are never called. Each
// playbook has a call cap (Options.Caps, DefaultCap: smoke 30, security 380,
// ux 90, perf 80, fuzz 250, each under its persona's max_turns); probing
// stops a few calls short of it so that findings can still be reported. A
// playbook cannot see the run's budget, so the cap is its budget awareness.
//
// # Reporting
//
// Every finding goes through qa_report, once per distinct problem per run,
// with a one-line summary (what, where, expected and observed; a secret is
// named by kind, location and at most its first six characters, never
// repeated) and, wherever one exists, a repro that reproduces in a fresh
// run through `fleetd tool call`: observe-level qa_fetch, qa_compile and
// qa_chain calls, or qa_call against a public name. A repro too large for a
// 2048-byte feedback entry is left out and the summary says so. Findings
// that need a name the run minted (it is released when the run ends) carry
// the steps in the summary and no repro. Surfaces are chosen so different
// problems never share a fingerprint (surface plus repro): face, docs,
// call, compiler, registry, and web (other paths on the platform's hosts),
// links, cors, headers, mixed-content, content-type and perf.
//
// Quality bar: a finding at high or critical is filed only after its repro
// reproduces — the playbook makes the repro call again and checks the same
// thing shows (the secret is still there, the CORS verdict, the answer
// class, the revert that did not happen). One that does not reproduce is
// filed at low with qa_report's flaky flag (flaky=true in the qa/v1
// header); one that could not be replayed (no call left) is filed at
// medium and says so.
//
// # The crawl
//
// security and ux start from one crawl of the platform's web surface
// (probe.Probe.Crawl, memoized for the replay so any rule can use its pages):
// breadth first from the docs, the faces of target.names, each allowlisted
// origin's index and robots.txt, then (when the run may mint) the face of a
// fresh name; every same-scope link package crawl finds is followed — HTML
// a, link, script, img and srcset, iframe, form, meta refresh; markdown
// links (absolute, root-relative, relative, reference-style), bare URLs and
// paths in code spans; URLs and paths in JS and JSON bodies; sitemaps and
// robots.txt — with template placeholders filled with a public name, at
// most three URLs of a template (ids and numbers blanked), stylesheets,
// images and media after every page, and 40 pages.
//
// # Checks
//
// smoke walks the main path: qa_create, qa_compile of the smallest
// known-good corpus programs (Options.Corpus, filled from target.corpus by
// LoadCorpus or OptionsFor), qa_publish of one that compiled, qa_fetch of the
// new name's face, qa_call of it; then the faces of target.names, the docs
// and a call to a public name. A step that should work and does not (a mint
// that reverts, a known-good program that does not compile, a publish that
// fails, a page that answers 4xx/5xx or not at all, a call that answers 5xx
// or times out) is one finding. At observe only the read-only steps run.
// A request that got no answer at all is re-tried once after
// Options.RetryDelay and a control is checked before it becomes a finding
// (smoke_reach.go): the chain node (qa_chain eth_blockNumber) or a page of
// the target on another host. The finding says which control answered;
// when none does, nothing is posted and the run ends with ErrOwnNetwork.
//
// security:
//   - Admin functions: qa_chain simulate of every target.admin_functions
//     signature from a fresh address; one that does not revert is critical.
//   - The registry's whole surface (issue 23): its runtime bytecode
//     (eth_getCode) gives every selector its dispatcher compares
//     (chain/evm); each is named, where it can be, from target.
//     admin_functions, target.abis (files in Options.ABIs, URLs fetched
//     by the run), ABIs and signatures on the crawled pages, the
//     platform ABIs fleetd ships and common signatures. Every selector but
//     the named read-only ones and the platform's public functions
//     (register, release, setMetadata, submitFeedback...) is simulated
//     from a fresh address, with zero and derived arguments (the caller's
//     address, 1, a short text; unnamed ones bare and with one or two
//     words), by debug_traceCall with the prestate tracer's diff mode
//     where the node offers it, else eth_simulateV1, else eth_call; the
//     finding says which. A call that changes the registry's storage is a
//     finding: critical when a contract-wide slot that held an address then
//     holds the caller's (a stranger takes a role), or another contract-wide
//     slot changes (not a counter step) in a function whose name says
//     privileged (owner, admin, role, pause, upgrade, fee, treasury, ...);
//     high for such a slot otherwise, or a privileged name changing only
//     per-key entries; medium when an unremarkable function changes only
//     per-key entries or counters. Token transfers and approvals and the
//     platform's own public functions are expected.
//     Without a trace, a call eth_simulateV1 shows succeeding is run again
//     between two reads of the registry's zero-argument functions: a
//     changed answer is the evidence (critical when one named another
//     address and then names the caller). Otherwise, and on eth_call alone,
//     only a privileged name makes a successful call a finding (high); the
//     rest is a note. target.admin_functions is
//     optional: it adds expectations (a listed function missing from the
//     dispatcher is a note).
//   - Verified keys (issue 23): every key-shaped value on a page (64 hex
//     digits named or not, with or without 0x, that the run records
//     redact; PEM keys on secp256k1; BIP-39 mnemonic phrases with a valid
//     checksum, whose accounts m/44'/60'/0'/0/0 to /4 are derived with the
//     empty passphrase) is turned into the addresses it controls, and the
//     chain is asked for each one's balance, nonce and whether a
//     zero-argument registry function returns it (owner(), a curator...).
//     A live key (funded, used or holding a role) is critical and says
//     what it controls (of a phrase: the account and its path); one the
//     chain could not be asked about is high when its name says key; one
//     that controls nothing is medium when named, and only a note when
//     unnamed. Pages are all judged before the limit on findings applies,
//     most severe first. Nothing is ever signed with a found key.
//   - Invariants over call sequences (issue 23): properties as data
//     (invariants/*.yaml, embedded; Options.Properties, LoadProperties),
//     each a sequence of calls by throwaway actors (alice, bob, carol:
//     addresses without keys) with what each must do (succeed, revert,
//     return an address, bytes or a number). A property whose functions
//     are all in the registry's dispatcher is simulated as one
//     eth_simulateV1 block, state carried from call to call and nothing
//     written; the first step that breaks it is a finding at the
//     property's severity. The embedded ones: a claimed name cannot be
//     claimed by another; only a name's owner releases it or changes its
//     metadata; a released name has no owner and no metadata, also once
//     claimed again; ownership and fees change only by their owner. On a
//     node without eth_simulateV1 none is checked and the run says why.
//   - Secrets: every crawled page (JS bundles and JSON answers included) and
//     a short list of commonly exposed paths on the first two allowlisted
//     hosts of the target (/.env, /.git/config,
//     /.aws/credentials, /config.json, /debug/vars, /server-status,
//     /backup.zip, /keys) are scanned for private keys (64 hex digits
//     assigned to a name saying key, secret or private, or following the
//     words "private key"; PEM blocks), AWS, GitHub, Google, OpenAI, Slack
//     and Stripe keys by their prefixes, JSON web tokens, and high-entropy
//     values assigned to credential-like names. Hashes, transaction ids and
//     bytes32 keys are not secrets. An exposed file recognized by its
//     content (an env file, git metadata, expvar, server-status, a zip) is a
//     finding even without a secret in it.
//   - Stored XSS (exercise, stored_xss.go): a canary — a run-seeded token
//     inside a <script> element and an ontoggle handler, each calling a
//     property named by the token only if one is defined (harmless where it
//     stays), carried in a string literal of a corpus program — is
//     published to a fresh name and looked for unescaped in its face
//     (unless the stored-injection probes below minted a name: they cover
//     every field). Reflected XSS on the call surface (exercise,
//     reflected_xss.go): the same canary sent through qa_call is a finding
//     only when reflected unescaped in an HTML reply.
//   - Stored injection, per field and HTML context (CWE-79). Fields come
//     from the registry's MetadataSet events (qa_chain metadata_events),
//     named by keccak256 against the words of the docs and a dictionary of
//     common field names; an unnamed key is written by its 0x key. At every
//     rung the values existing names store are read and judged on the pages
//     that show them (the face, index and listing pages): a value whose <,
//     " or ' (or a javascript: URL) escapes its place with active content is
//     already-live stored injection (high; inert markup is only noted). When
//     one value sits in several fields, all are named: the page cannot tell
//     them apart. At exercise a fresh name gets a plain canary in each field
//     (qa_publish {name, key, text}); the face, same-origin index and
//     listing pages and the pages the face links to are read with the
//     x/net/html tokenizer to find where each canary lands: element text,
//     title or textarea, comment, quoted or unquoted attribute, URL
//     attribute, event handler, script (a string, template, code, comment
//     or regular expression) or style. A payload for each place, carrying a
//     fresh canary, is written and judged: did it become markup, an
//     attribute, a javascript: URL or code? Fields sharing a script, style,
//     title or comment are tested in separate rounds. One finding per
//     (field, context) with the payload and the steps (the name is released
//     when the run ends), merged with the live finding of the same field
//     and context, whose page is then the repro. Writes stop while one of
//     the budget is left (writes_left in the tools' results).
//   - Reflected injection and path handling, only after an exercise-rung
//     call went through (they send attack payloads, even if through
//     qa_fetch): every discovered URL with a query parameter or a path
//     parameter (a file-like or numeric last segment, the faces' name
//     segment), from the links and documented GET endpoints of the fetched
//     pages, gets a canary (qa_fetch follow_redirects false). In HTML: a
//     payload per place (reflected XSS, CWE-79, high); in Location, or a
//     redirect-like parameter: an outside .invalid host, absolute,
//     scheme-relative and with a backslash (open redirect, CWE-601, medium);
//     in any header: CR LF or LF and a header of ours (CWE-113, medium);
//     a file-like parameter: ../ steps to /etc/passwd plain, %2f-encoded and
//     %252f-double-encoded, and ..%5c to win.ini (path traversal, CWE-22,
//     high). One finding per (URL pattern, class); the repro is the fetch.
//   - Agents (exercise): the probe families (redteam/families/*.yaml,
//     embedded, or Options.Families) go to every agent target.names lists and
//     the run's own name: direct prompt injection (LLM01:2025), disclosure of
//     instructions (LLM07:2025), of credentials and internal endpoints
//     (LLM02:2025), cross-agent access on a claim in the message
//     (LLM06:2025), and messages shaped like tool calls (LLM06:2025). A reply
//     is judged against the agent's reply to "hello" and to the message's
//     control (the same request without the attack's framing) by the family's
//     detectors: a text only compliance produces, credentials
//     (probe.ScanSecrets), internal details (probe.ScanLeaks), internal URLs,
//     instruction-like phrases outside a refusal, /etc/passwd. One finding
//     per (agent, family), quoting the first message that worked and the
//     reply (secrets redacted); critical when a credential shows.
//   - The active rules leave a host alone after three 429 answers in the
//     run (the tools themselves pace requests per host and back off a 429).
//   - Spoofed identity (exercise): the same "whoami" call with and without
//     a claimed identity ("from": admin, owner, root, the zero address) and
//     with identity headers set to admin (1 for a name ending in id): the
//     headers authenticating proxies and gateways commonly set, most
//     common first (X-Forwarded-User, X-Remote-User, X-User, X-User-Id,
//     oauth2-proxy's, Kong's, ...: identityHeaders) plus up to
//     eight names the target itself uses (issue 23): header names in the
//     docs (curl -H examples, raw header lines, X- headers and headers
//     named in prose), in crawled responses (their header names, Vary and
//     Access-Control-Allow/Expose-Headers lists) and in the call
//     endpoint's own answer, kept when a small classifier of words says
//     identity (user, uid, account, role, tenant, caller, actor,
//     principal, impersonate, on behalf of, run-as, sub, owner, member,
//     ...; not User-Agent, counts or URLs). Up to six parameter names
//     learned the same way (JSON keys and query parameters in the docs,
//     parameters named in prose, JSON keys of answers) go into the call's
//     JSON body, and into the query of up to four JSON endpoints the crawl
//     fetched (compared with a second plain fetch). Each set is sent at
//     once, then one name at a time when it makes a difference. A reply
//     that differs materially — a refusal turned into success, a secret
//     that was not there, or at least three new words beyond an echo of
//     the claim, when identical calls answer identically — is a finding
//     naming where the name was learned; critical when it reveals a
//     secret. The call endpoint's headers and body fields, and the query
//     parameters, that admin and 1 did not show are then claimed with the
//     identities the platform itself uses (platformIdentities, at most
//     five): the owners the name registry on chain records for the called
//     agent and the other names (registryOwners, qa_chain owner_of), the
//     addresses on the called agent's face (its owner's, typically), its
//     own name, the other agents' names, then addresses other pages show:
//     a gateway that checks a claim against the platform's own identities
//     refuses admin and lets an owner's address through (issue 33). After
//     the sign-in checks, the addresses of the identities they signed in
//     are claimed the same way (secSpoofSignedIn). Forms: GET forms the static crawl finds are submitted by the
//     reflected-injection probes below, a canary per field; POST forms
//     either crawl finds (reflected_xss.go, inject.Posted) are submitted over HTTP
//     with qa_submit at exercise (urlencoded or multipart as the form
//     says; one write each, one short of the write budget; at most four):
//     a canary per text field, then a payload fitted to each place it
//     lands, judged as for a URL parameter (reflected XSS through the
//     form, high, medium under a CSP without 'unsafe-inline', confirmed by
//     replaying the repro; a 5xx answer medium). The run's notes name the
//     forms nothing submitted.
//   - Headers: per host, crawled HTML pages without Content-Security-Policy,
//     X-Content-Type-Options: nosniff or X-Frame-Options (or CSP
//     frame-ancestors) are one low finding.
//   - CORS: every crawled response, plus per host a credentialed GET of the
//     index with the foreign Origin https://qa-origin.example and with
//     Origin null, and on the call endpoint's host a GET and an OPTIONS
//     preflight (for a JSON POST) of the call endpoint with the foreign
//     Origin. With Access-Control-Allow-Credentials: true, a reflected
//     foreign origin is high, null medium, a wildcard low (browsers refuse
//     it); a wildcard without credentials is public data, no finding. One
//     finding per host at the worst verdict, the request that showed it as
//     the repro.
//   - Mixed content: HTTPS pages that load scripts, frames, stylesheets or
//     submit forms over plain HTTP (medium), or only images and media (low),
//     one finding per host.
//   - With the rendering crawl (Options.Renderer; dom_xss.go,
//     csp_violations.go, secrets.go): DOM-based XSS (exercise, high,
//     CWE-79) — each rendered page that runs scripts
//     is opened with a payload calling the renderer's canary hook
//     (crawl.CanaryHook, a no-op in a visitor's browser) with a canary in the fragment
//     and in each query parameter the page has or its scripts read, a
//     canary per place, as markup and as a javascript: URL; a place counts only when the browser opens a dialog
//     with exactly its canary, and again with a fresh one on a second
//     render. Content-Security-Policy violations the browser reported on
//     load (low), mixed content only the browser saw (medium), secrets only
//     the rendered DOM holds (medium: no tool call replays them). Forms
//     (exercise): up to four non-GET forms of rendered pages are submitted
//     in the browser, each text field holding a payload with the form's
//     canary and the field's name; a field whose payload runs in the page
//     the submission leads to is cross-site scripting (high, CWE-79, again
//     with a fresh canary), a 5xx answer a medium finding. Stored DOM XSS
//     (exercise, stored_xss_dom.go): the JSON resources the rendered
//     pages' scripts read, writable by a form or script call to the same
//     URL or by the methods their OPTIONS answer allows, get a markup
//     canary per string field (qa_submit), and the pages that read them
//     are rendered again; on a chain platform the fresh name's metadata
//     fields (qa_publish) and its face. A field counts only when the
//     browser opens a dialog with its canary, again after a second write
//     with a fresh one (high, CWE-79); PUT and PATCH values are restored.
//   - Every canary written or submitted calls crawl.CanaryHook, which only
//     fleetd's renderer defines: a no-op in a visitor's browser. Last,
//     security deletes what its qa_submit POSTs created (their answers
//     name it; qa_submit deletes nothing else), keeping a write and a call
//     for each, and lists what it could not remove first in its summary
//     ("Left on the platform: ...", in the run record's footer).
//
// fuzz:
//   - Compiler: every seed (the corpus and the tiny generic seeds "", "x",
//     "{}", "()", "1", `"`, "a = 1;") is compiled once; then a deterministic
//     stage applies one structure-aware mutation at a time to every corpus
//     program — the contents of each bracket pair emptied, each condition
//     (if, while, for, ...) made constant true with its block emptied, all
//     numbers set to 0 and to 2^63; then up to two qa_fuzz sessions of 20 s
//     (engine auto: AFL++ when installed, else the built-in engine; after
//     AFL++, the built-in engine with its corpus dictionary) whose crashers
//     are replayed through qa_compile; and a havoc stage stacks one to three
//     random mutations (character flips, deletions, structural tokens,
//     duplicated chunks, spliced corpus lines and tokens, emptied brackets,
//     boundary numbers 0, -1, 2^31, 2^63, 1e309, constant conditions, long
//     identifiers, deep nesting; at most 32 KiB) until the cap. Rejected and
//     compiled are fine; crashed, resource (out of memory) and timeout (a
//     hang, also when the CPU limit ended it) are findings. Findings are
//     one per crash state (qa_compile's crash_state: the message with
//     literals masked and the target's top frames; a hang's is its input's
//     shape), up to three crash states and the first hang per run. Each is
//     minimized by delta debugging (ddmin over lines, then characters; each
//     test a qa_compile that must fail the same way; at most 40 compiles for
//     a crash, 30 for a hang, whose steps run at a shortened timeout_ms: 20x
//     the slowest clean compile, at least 1 s, at most half the timeout),
//     then replayed once exactly as the repro will say. It is reported with
//     the minimized source as the repro and state= (crash high, resource
//     and hang medium); one whose replay did not fail the same way is low
//     with flaky=true. Candidates holding a known reproducer are skipped,
//     and fuzzing stops after five timeouts (each costs the compile
//     timeout).
//   - Go fuzz target (target.repo fuzz_package and fuzz_target): after the
//     compiler's deterministic stage, one qa_fuzz engine libfuzzer session
//     of 60 s (libFuzzer with comparison feedback; qa_fuzz runs go test
//     -fuzz instead when clang is missing or the harness does not build);
//     each crasher (up to three, minimized by the engine) is replayed
//     through qa_fuzz replay with the engine that found it and reported
//     with that call as the repro, on the
//     repository's first surface (else "code"): high for a crash, medium
//     for a hang or resource exhaustion, low and flaky when the replay
//     does not fail the same way.
//   - C/C++ harness (target.repo harness and build, no target.compiler):
//     one qa_fuzz engine aflpp session of 60 s on the afl-clang-fast build
//     (persistent, CmpLog on; the summary says the mode and why); each
//     crasher (up to three) is replayed on that build through qa_fuzz
//     replay (replay_base64 for a binary input) and reported the same way.
//   - Go repository without a fuzz target (target.repo alone: no
//     fuzz_target, no harness, no target.compiler): qa_fuzz harness=list
//     generates native fuzz targets for its ranked entry points
//     (fuzzing/harness); each of the six best gets a 20 s session, then
//     60 s sessions go to the ones whose last session found new coverage,
//     420 s in all. Each crasher is replayed on its harness and judged;
//     only a library bug is reported (its replay, which returns a
//     standalone reproducer test, as the repro), harness crashes are
//     counted in the summary.
//   - Call endpoint (exercise): a grammar of 39 requests, each departing
//     from POST {"target","message"} one way — empty, whitespace-only, 16 KB,
//     unicode, control-character, JSON-fragment and format-string messages;
//     target and message as a number, boolean, null, array and object;
//     missing and extra fields and a duplicated key; empty, truncated,
//     trailing-garbage, comma-less, lone-surrogate, array, null, deeply
//     nested and 60 KB bodies; a JSON body declared text/plain, a
//     form-encoded and an XML body. Each answer is classified: a hang (the
//     call timeout), an endpoint that stops answering, 5xx, leaked
//     internals, an empty 2xx, or fine (a clean 4xx or a reply). One finding
//     per distinct behaviour (class, status, kinds of internals leaked) with
//     the smallest request as the repro (for an endpoint that went down, the
//     request that brought it down, after which the grammar stops): hang,
//     down and a 5xx that leaks internals high, a 5xx medium, a leak medium,
//     an empty 2xx low.
//
// ux:
//   - Docs as a contract: every crawled docs, markdown, text or HTML page
//     (faces excepted: user content) is read for claims (package contract:
//     method, URL, promised content type, success status and response
//     fields, from bullets, tables, code blocks, prose, curl examples and
//     HTML). Each documented endpoint (12 at most, placeholders filled) is
//     requested as documented where a tool can: GET and HEAD with qa_fetch;
//     POST to the call endpoint with qa_call (exercise); other methods
//     elsewhere by a GET whose 405 Allow header lacks them. No answer, 404,
//     410, 5xx, 405/501, another status, content type or missing fields than
//     promised are one medium finding per endpoint quoting the doc lines.
//     A 401 or 403 is no finding: a note, which says the endpoint is behind
//     the documented login when the docs (or target.auth) describe one
//     (authz.Learn), else that it needs credentials the docs do not show.
//   - Leaked internals: the face of a name that cannot exist, a missing path
//     on each host, the call endpoint's answer for an unknown target, every
//     crawled error answer, and stack traces or database errors in any other
//     crawled page (docs, scripts and stylesheets excepted) are scanned for OS
//     errors (no such file or directory, permission denied, (os error N),
//     ENOENT, ...), absolute server paths (/home, /srv, /var, /usr, /tmp,
//     /opt, ..., C:\), stack traces (Go, Python, Node, Java, Rust, PHP) and
//     database errors. One finding per distinct leak (a path leak counts by
//     its directory), medium for a stack trace, else low.
//   - Dead links: every link an author wrote (markup, markdown, bare URLs,
//     sitemaps; not paths guessed from scripts, JSON or robots.txt) on a
//     crawled page but a face (user content) whose target answers 404, 410,
//     5xx or not at all (low; surface docs when the page is documentation,
//     links otherwise).
//   - Content types: a body declared JSON that does not parse, a JSON
//     document served as HTML, a script served as HTML, a body without a
//     Content-Type (low, one per host and kind).
//   - Empty replies (exercise): qa_call "hello" to target.names and to a
//     fresh name; HTTP 2xx with an empty reply is a finding.
//   - With the rendering crawl (page_errors.go, leaked_internals.go): a
//     rendered page that throws on load (uncaught exceptions, medium), loses requests on load or logs
//     console errors (low), and stack traces or database errors its
//     rendered DOM shows (the leak rule above, without a repro).
//
// perf:
//   - Latency: each face of target.names and each docs page is fetched
//     Options.Samples times (default 8), and at exercise each public name is
//     called as often; p50 and p95 (nearest rank) of latency_ms are computed
//     and a p95 over target.slo.p95_ms is measured again: over it in the
//     second series too (or with no room for one), it is a finding (surface
//     perf) with both series' numbers and the measured call as the repro;
//     under it, a note (one stalled answer, the slowest of a short series,
//     would be the p95 alone). Without an SLO the numbers
//     go to the summary only. Comparing with earlier runs is future work: a
//     run sees only its own transcript, and playbooks read no files.
//   - Compile time growth: a corpus line that repeats into a valid program of
//     any size (a constant declaration with its name made unique per copy,
//     or a statement with no identifiers but its keyword) is compiled at
//     doubling sizes from 16 KiB until a compile takes 2 s, with a last
//     point at 768 KiB (where linear terms weigh least). The startup time (a
//     tiny instance) is subtracted, points faster than the startup are
//     dropped, and the exponent of time against size is fitted by least
//     squares on log-log over the three largest sizes; above 1.35 (n log n
//     stays near 1.1; a quadratic term shows 1.5 and up over this range)
//     with the largest at least 200 ms is a medium finding. The input is described in the summary (a generated input
//     that shows the slowdown cannot fit a feedback entry), so there is no
//     repro.
//   - Gas (exercise): the smallest corpus program is published to a fresh
//     name; gas used above the estimate (medium) or an estimate above twice
//     the gas used (low) is a finding.
package specialists
