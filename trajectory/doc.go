// Package trajectory writes and reads fleetd run records: one JSONL file per
// probe run, <data_dir>/runs/<run-id>.jsonl, recording every turn of the
// agent loop (DESIGN.md §11). It is a leaf: standard library only.
//
// # Format
//
// Each line is one JSON object with snake_case keys whose first key is the
// "type" discriminator:
//
//	{"type":"header","run_id":...,"specialist":...,"goal":...,"persona_sha256":...,"build":...,"model":...,"harness_version":...,"dial":...,"budget":{...},"tools":[...],"config":...,"started_at":...}
//	{"type":"turn","index":0,"observation":...,"proposed_action":{"tool":...,"args":...},"validation":{"result":"ok","retries":0},"executed_action":{...},"result":{...},"model_metadata":{"tokens_in":...,"tokens_out":...,"duration_ms":...},"latency_ms":...,"started_at":...}
//	{"type":"tool_disabled","tool":"qa_fetch","reason":"3 failures in a row","turn":7}
//	{"type":"footer","outcome":"done","final_summary":...,"totals":{"turns":...,"tool_calls":...,"refusals":...,"findings":...,"tokens_in":...,"tokens_out":...,"writes":...,"duration_ms":...},"ended_at":...}
//
// Ordering: exactly one header, first; turns (indexes 0, 1, 2, ... with no
// gaps) and tool_disabled records (turn = the index of the next turn, the
// first the tool is absent from) in execution order; exactly one footer,
// last. The Writer enforces this on the way in and the Reader on the way
// out. Footer outcomes are done, budget_exhausted, deadline_exceeded,
// cancelled, harness_error (with a harness_error message) and size_exceeded.
//
// Encoding is deterministic: struct fields in declaration order, map keys
// sorted, no HTML escaping, json.RawMessage compacted. A turn's observation
// and result, and the header's config, may be any JSON-encodable value on
// the way in and come back as json.RawMessage, so Write, Read, re-encode
// (MarshalRecord) reproduces the file byte for byte.
//
// # Failing loudly
//
// Nothing is dropped or rewritten to make a value encodable. Before a record
// is written, ValidateEncodable walks it and returns an *UnserializableError
// naming the offending field ("turn.result.items[3].fn") for NaN or ±Inf,
// complex numbers, channels, funcs, unsafe pointers, cycles, invalid
// json.RawMessage and failing marshalers; nothing is written then. The one
// normalization is encoding/json's: invalid UTF-8 in strings becomes U+FFFD.
//
// # Size budget
//
// A run record may grow to DefaultMaxBytes (50 MiB; WithMaxBytes changes
// it). The last FooterReserve bytes are kept for the footer: a header, turn
// or tool_disabled record that would cross into them is refused with
// ErrSizeBudget and nothing is written, so the loop can end the run with
// outcome size_exceeded. The footer itself is always written.
//
// # Crash semantics
//
// Create writes and fsyncs the header under a temporary name and links it
// into place, so a run record always starts with a whole header. Every
// record is then one write(2) of a whole line straight to the file (no user
// space buffer): once WriteTurn returns, the record survives a crash of the
// process (panic, SIGKILL, OOM kill). The file is fsynced at most
// WithSyncInterval after a write (default one second, by a timer, so an idle
// run is synced too) and always by Close after the footer, so a machine
// crash or power loss loses at most the records of the last interval. A
// crash mid-write leaves at most one torn last line: readers return
// ErrTornTail for it once and then io.EOF, while damage anywhere else is a
// *CorruptError naming the line. If a write fails the writer truncates the
// partial line away and stays usable. Recover, run by the daemon at start,
// truncates a torn tail and appends a harness_error footer to every run
// record a crash left without one.
//
// # Redaction
//
// No key material may reach a run record. Every string in a record, object
// keys and strings inside json.RawMessage included, is scanned before it is
// written, and secrets are replaced by "[REDACTED:<kind>]":
//
//   - anywhere: PEM private key blocks (to the END line, or to the end of
//     a string cut short), Google API keys (AIza...), OpenAI-style keys
//     (sk-... with 20+ key characters including a digit), GitHub tokens
//     (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), AWS access key ids
//     (AKIA...), the credential after "Authorization:" and bearer tokens;
//   - anywhere: every secret registered with Writer.AddSecret or a
//     Redactor (hex secrets match with or without 0x, in any case);
//   - the whole value of a credential field (authorization, cookie,
//     password, api_key, access_token, client_secret, private_key,
//     mnemonic, ...; names compared without case or punctuation);
//   - a 64-hex value (bare or 0x), the shape of a secp256k1 private key:
//     always in a field whose name has a key word (key, private, priv,
//     secret, seed, mnemonic, pk, ...) and no digest word; never in a field
//     whose name has a digest word; elsewhere unless the nearest telling
//     word before it on the same line, within six words, is a digest word
//     ("tx 0x..."), or it is an ABI word (16 or more leading zeros: an
//     address or a number), or it is the whole string with its 0x (a
//     structured chain value such as an eth_call result);
//   - anywhere: a BIP-39 mnemonic phrase (MnemonicSpans: 12 to 24 words of
//     the English list in a row, whatever separates them, whose checksum
//     matches; 12 list words with a wrong checksum are prose and kept).
//
// The 64-hex rule is a trade-off. Transaction hashes, block hashes, log
// topics, sha256 digests and fingerprints have exactly the shape of a
// private key and fill tool results; redacting them all would make the
// records useless for triage and repro. So a field whose name has a digest
// word (tx, hash, tx_hash, block_hash, sha256, digest, fp, id, topic, ...)
// is never redacted by shape ("key_hash" is a digest: the digest word wins),
// and neither is a labelled digest in text nor a 0x value that is a whole
// string. Until issue 23 an unlabelled 64-hex value in text was kept too;
// but an unlabelled key in a fetched page is what a leak looks like, and
// the security specialist now checks every such value against the chain,
// so every value it can find is redacted here (the cost: an unlabelled
// hash inside a page body is redacted as well). The runtime also registers
// every key it creates (throwaway keys, API keys) with AddSecret:
// registered secrets are redacted wherever they appear, digest fields
// included. Redaction is applied until nothing changes, so redacting a
// record twice gives the same bytes.
//
// Redact applies the pattern rules to a single string, for logs.
package trajectory
