package specialists

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Key check limits.
const (
	secKeyChecks   = 8  // candidates verified against the chain per run
	secKeyFindings = 4  // key findings per run
	secRoleReads   = 10 // zero-argument registry functions read for role holders
	secPhraseAccts = 5  // accounts of a mnemonic checked: m/44'/60'/0'/0/0 to /4
)

// pageKey is a candidate that controls accounts: a well-formed secp256k1
// key and its address, or a mnemonic phrase and the first standard
// Ethereum accounts it derives.
type pageKey struct {
	replay.KeyCandidate
	accts []account
}

// account is an address a candidate controls; path is its derivation
// path, "" for a key itself.
type account struct {
	addr [20]byte
	path string
}

// chainKeys returns the candidates of text that control accounts: 64 hex
// digits below the curve order, PEM blocks on secp256k1 (other PEM keys
// stay with the secret scanner), and mnemonic phrases (the empty
// passphrase, the path wallets use by default).
func chainKeys(text string) []pageKey {
	return chainKeysMemo.Get(text, func(text string) []pageKey {
		var out []pageKey
		phrases := 0
		for _, c := range replay.KeyCandidates(text) {
			if c.Kind == "mnemonic" {
				// ~30 ms each (2048 PBKDF2 rounds, five derivations); no
				// more than a run verifies.
				if phrases == secKeyChecks {
					continue
				}
				phrases++
				seed, err := evm.MnemonicSeed(c.Words(), "")
				if err != nil {
					continue
				}
				derived, err := evm.EthAccounts(seed[:], secPhraseAccts)
				if err != nil || len(derived) == 0 {
					continue
				}
				pk := pageKey{KeyCandidate: c}
				for _, d := range derived {
					pk.accts = append(pk.accts, account{d.Address, d.Path})
				}
				out = append(out, pk)
				continue
			}
			var k [32]byte
			var err error
			if c.Kind == "PEM" {
				k, err = evm.PEMKey(c.Value())
			} else {
				k, err = evm.HexKey(c.Value())
			}
			if err != nil {
				continue
			}
			a, err := evm.AddressOf(k)
			if err != nil {
				continue
			}
			out = append(out, pageKey{c, []account{{addr: a}}})
		}
		return out
	})
}

var chainKeysMemo replay.Memo[[]pageKey]

// immediateSecrets are the secrets of text reported by kind alone: all the
// scanner finds but private keys that could control an account, which
// secKeys verifies against the chain instead.
func immediateSecrets(text string) []replay.Secret {
	found := replay.ScanSecrets(text)
	keys := chainKeys(text)
	if !slices.ContainsFunc(found, func(s replay.Secret) bool { return s.Kind == "hex private key" || s.Kind == "PEM private key" }) {
		return found
	}
	var out []replay.Secret
	for _, s := range found {
		switch s.Kind {
		case "hex private key":
			continue
		case "PEM private key":
			if slices.ContainsFunc(keys, func(k pageKey) bool { return k.Kind == "PEM" && k.Line == s.Line }) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// keyPage is a page holding a key that could control an account, with
// the secrets found on it that need no chain to judge. A rendered page's
// keys are in its DOM (text), not in the response as served.
type keyPage struct {
	page     replay.Page
	found    []replay.Secret
	rendered bool
	text     string // the rendered DOM; "" for a served page (its body)
}

func (kp keyPage) body() string {
	if kp.rendered {
		return kp.text
	}
	return replay.Body(kp.page.Res)
}

// renderedKeyPages are the rendered pages whose DOM holds a key no served
// response holds: a key the page's scripts assemble or fetch.
func renderedKeyPages(p *replay.Play, served []keyPage) []keyPage {
	if !p.Rendering() {
		return nil
	}
	seen := map[string]bool{}
	for _, kp := range served {
		for _, k := range chainKeys(kp.body()) {
			seen[strings.ToLower(k.Value())] = true
		}
	}
	var out []keyPage
	for _, rp := range p.Rendered() {
		if slices.ContainsFunc(chainKeys(rp.R.HTML), func(k pageKey) bool { return !seen[strings.ToLower(k.Value())] }) {
			out = append(out, keyPage{page: rp.Page, rendered: true, text: rp.R.HTML})
		}
	}
	return out
}

// chainRepro is a qa_chain call that shows again what makes a verdict
// live, with its check: the balance or the nonce of the first live
// account. ok is false when a role is the only evidence.
func chainRepro(vs []keyVerdict) (args map[string]any, holds func(fleet.Result) bool, ok bool) {
	for _, v := range vs {
		for _, a := range v.accts {
			method := ""
			switch {
			case a.balance != nil && a.balance.Sign() > 0:
				method = "eth_getBalance"
			case a.nonce > 0:
				method = "eth_getTransactionCount"
			default:
				continue
			}
			args = map[string]any{"method": method, "params": []any{addrHex(a.addr), "latest"}}
			holds = func(r fleet.Result) bool {
				q, err := quantity(rpcResult(r))
				return r.IsOK() && err == nil && q.Sign() > 0
			}
			return args, holds, true
		}
	}
	return nil, nil, false
}

// keyVerdict is what the chain says about one key: of each account it
// controls, in order, until the chain could not be asked (why).
type keyVerdict struct {
	key   pageKey
	accts []acctVerdict
	why   string // not (wholly) verified: the reason
}

// acctVerdict is what the chain says about one account.
type acctVerdict struct {
	account
	balance *big.Int
	nonce   uint64
	roles   []string
}

func (a acctVerdict) live() bool {
	return a.balance != nil && a.balance.Sign() > 0 || a.nonce > 0 || len(a.roles) > 0
}

// live: an account the key controls holds funds, has sent or holds a role.
func (v keyVerdict) live() bool { return slices.ContainsFunc(v.accts, acctVerdict.live) }

// unverified: the chain said nothing live and could not be asked about
// every account.
func (v keyVerdict) unverified() bool { return v.why != "" && !v.live() }

func addrHex(a [20]byte) string { return "0x" + hex.EncodeToString(a[:]) }

// describe says what the chain showed, without the key.
func (v keyVerdict) describe() string {
	k := v.key
	if k.Kind != "mnemonic" {
		d := k.Describe() + " controls " + addrHex(k.accts[0].addr)
		switch {
		case v.unverified():
			return d + "; not verified: " + v.why
		case !v.live():
			return d + ", which holds nothing, has sent nothing and holds no role the registry reveals"
		}
		return d + ", which " + v.accts[0].what()
	}
	if v.live() {
		var live []string
		for _, a := range v.accts {
			if a.live() {
				live = append(live, addrHex(a.addr)+" (path "+a.path+"), which "+a.what())
			}
		}
		return k.Describe() + " derives " + strings.Join(live, "; and ")
	}
	first, last := k.accts[0], k.accts[len(k.accts)-1]
	d := fmt.Sprintf("%s derives %s (path %s) to %s (path %s)", k.Describe(), addrHex(first.addr), first.path, addrHex(last.addr), last.path)
	if v.why != "" {
		return d + "; not verified: " + v.why
	}
	return d + ", none of which holds anything, has sent anything or holds a role the registry reveals (other passphrases and paths were not tried)"
}

// what says what a live account holds, has done and is.
func (a acctVerdict) what() string {
	var what []string
	if a.balance != nil && a.balance.Sign() > 0 {
		what = append(what, "holds "+a.balance.String()+" wei")
	}
	if a.nonce > 0 {
		what = append(what, fmt.Sprintf("has sent %d transaction(s)", a.nonce))
	}
	for _, r := range a.roles {
		what = append(what, "is "+r)
	}
	return strings.Join(what, ", ")
}

// secKeys checks every key-shaped value on the pages against the chain:
// the address it controls (of a mnemonic phrase: the first standard
// accounts it derives), its balance, its nonce and whether the registry's
// zero-argument functions name it (owner(), admin(), ...). A live key is
// critical; one the chain could not be asked about is high when its name
// says key; one that controls nothing is medium when named and not
// reported otherwise. The key itself never leaves the page: only its
// addresses go to the chain, and nothing is signed with it.
//
// Each page's other secrets (found) go into the same finding: a finding
// is one per page.
func secKeys(p *replay.Play, pages []keyPage, fns []surfFn) {
	kc := &keyCheck{p: p, fns: fns, seen: map[string]keyVerdict{}}
	quiet := 0
	// Every page is judged before any is reported, so the limit on
	// findings drops the least severe, never a live key behind placeholders.
	type judged struct {
		kp          keyPage
		verdicts    []keyVerdict
		sev, keySev fleet.Severity
		parts       []string
	}
	var todo []judged
	for _, kp := range pages {
		keys := chainKeys(kp.body())
		var verdicts []keyVerdict
		fresh := false
		for _, k := range keys {
			v, done := kc.seen[k.Value()]
			if !done {
				v = kc.verify(k)
				kc.seen[k.Value()] = v
				fresh = true
			}
			verdicts = append(verdicts, v)
		}
		if !fresh && len(kp.found) == 0 {
			continue // the same keys as a page already judged
		}
		keySev, parts := keyFinding(verdicts)
		sev := keySev
		if sev == "" {
			quiet += len(verdicts)
		}
		for _, s := range kp.found {
			if sev == "" || s.Sev.Rank() > sev.Rank() {
				sev = s.Sev
			}
			if len(parts) < 5 {
				parts = append(parts, "a "+s.Describe())
			}
		}
		if sev != "" {
			todo = append(todo, judged{kp, verdicts, sev, keySev, parts})
		}
	}
	slices.SortStableFunc(todo, func(a, b judged) int { return b.sev.Rank() - a.sev.Rank() })
	if len(todo) > secKeyFindings {
		p.Notef("%d more pages with key-shaped values, none more severe than those reported: over the limit of %d findings", len(todo)-secKeyFindings, secKeyFindings)
		todo = todo[:secKeyFindings]
	}
	for _, j := range todo {
		kp, pg, verdicts := j.kp, j.kp.page, j.verdicts
		values := make([]string, len(verdicts))
		for i, v := range verdicts {
			values[i] = strings.ToLower(v.key.Value())
		}
		holds := func(r fleet.Result) bool {
			body := strings.ToLower(replay.Body(r))
			return slices.ContainsFunc(values, func(v string) bool { return strings.Contains(body, v) }) ||
				slices.ContainsFunc(kp.found, func(s replay.Secret) bool { return replay.HoldsSecret(replay.Body(r), s) })
		}
		summary := fmt.Sprintf("Public URL %s (HTTP %d) exposes %s. ", replay.DescribePage(pg), replay.Status(pg.Res), strings.Join(j.parts, "; "))
		if kp.rendered {
			summary = fmt.Sprintf("Public URL %s, once a browser runs its scripts, shows (in no response as served) %s. ", replay.DescribePage(pg), strings.Join(j.parts, "; "))
		}
		switch j.keySev {
		case "":
			summary += "Anyone can read it; rotate the credential and remove it from public paths."
		case fleet.SeverityCritical:
			summary += "Anyone can sign as that account: move what it holds and revoke its roles, then remove the key from public paths (fleetd read the chain only; it never signs with a found key)."
			if slices.ContainsFunc(verdicts, func(v keyVerdict) bool { return v.key.Kind == "mnemonic" && v.live() }) {
				summary += " A phrase controls every account it derives: move them all, not only those named here."
			}
		case fleet.SeverityHigh:
			summary += "It is named as a key but whether it is live could not be checked; treat it as live: rotate it and remove it from public paths."
		default:
			summary += "It controls nothing on this chain (a placeholder, or a key of another chain): remove it from public paths all the same."
		}
		surface := replay.SurfaceOf(p.Target(), pg.URL)
		if !kp.rendered {
			p.FileChecked(j.sev, surface, summary, "qa_fetch", map[string]any{"url": pg.URL}, holds)
			continue
		}
		// qa_fetch shows the page as served, without the key: the chain
		// read that made it live is the repro; otherwise, as for other
		// secrets only the rendered DOM shows, medium.
		if args, live, ok := chainRepro(verdicts); ok && j.keySev == fleet.SeverityCritical {
			p.FileChecked(j.sev, surface, summary, "qa_chain", args, live)
			continue
		}
		sev := j.sev
		if sev.Rank() > fleet.SeverityMedium.Rank() {
			sev = fleet.SeverityMedium
			summary += " (Seen only in the rendered DOM and no chain read replays it, so filed at medium.)"
		}
		p.File(sev, surface, summary, "", nil)
	}
	if quiet > 0 {
		p.Notef("%d unnamed key-shaped value(s) (64 hex digits, mnemonic phrases) on the pages checked as keys: none controls anything on the chain (or the chain could not say), so none is reported", quiet)
	}
}

// keyFinding is the severity of a page's keys and what to say of each
// that counts; "" when none does. Overlapping readings of one run of list
// words as phrases count once.
func keyFinding(vs []keyVerdict) (fleet.Severity, []string) {
	var sev fleet.Severity
	var parts []string
	raise := func(s fleet.Severity) {
		if sev == "" || s.Rank() > sev.Rank() {
			sev = s
		}
	}
	for i, v := range vs {
		// Of overlapping readings of one run of list words, a live one
		// speaks for the run; failing that, the first that is named.
		if v.key.Kind == "mnemonic" && !v.live() && slices.ContainsFunc(vs, func(o keyVerdict) bool {
			if o.key.Kind != "mnemonic" || !o.key.Overlaps(v.key.KeyCandidate) {
				return false
			}
			return o.live() || o.key.Named && slices.IndexFunc(vs, func(x keyVerdict) bool { return x.key.Value() == o.key.Value() }) < i
		}) {
			continue
		}
		kind := "a " + v.key.Kind + " private key"
		if v.key.Kind == "mnemonic" {
			kind = "a mnemonic phrase"
		}
		switch {
		case v.live() && v.key.Kind == "mnemonic":
			raise(fleet.SeverityCritical)
			parts = append(parts, "a live mnemonic phrase: "+v.describe())
		case v.live():
			raise(fleet.SeverityCritical)
			parts = append(parts, "a live private key: "+v.describe())
		case v.unverified() && v.key.Named:
			raise(fleet.SeverityHigh)
			parts = append(parts, kind+" (unverified): "+v.describe())
		case v.key.Named:
			raise(fleet.SeverityMedium)
			parts = append(parts, kind+" that controls nothing: "+v.describe())
		}
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("%d more", len(parts)-3))
	}
	return sev, parts
}

// keyCheck asks the chain about keys, reading the registry's roles once.
type keyCheck struct {
	p      *replay.Play
	fns    []surfFn
	seen   map[string]keyVerdict
	checks int
	roles  map[[20]byte][]string // nil until read
}

// verify asks the chain about one key: each account it controls, in
// order, until one is live (a phrase's later accounts add nothing to the
// verdict) or the chain cannot be asked.
func (kc *keyCheck) verify(k pageKey) keyVerdict {
	v := keyVerdict{key: k}
	p := kc.p
	switch {
	case !p.Can("qa_chain"):
		v.why = "qa_chain is not available in this run"
		return v
	case kc.checks == secKeyChecks || !p.Room(3):
		v.why = fmt.Sprintf("over this run's limit of %d keys checked", secKeyChecks)
		return v
	}
	kc.checks++
	for i, a := range k.accts {
		if i > 0 && !p.Room(3) {
			v.why = fmt.Sprintf("the run's budget ran out after %d of the %d accounts", i, len(k.accts))
			return v
		}
		av, why := kc.account(a)
		if why != "" {
			v.why = why
			return v
		}
		v.accts = append(v.accts, av)
		if av.live() {
			return v
		}
	}
	return v
}

// account asks the chain about one address: its balance (the one answer
// it needs: the reason why not otherwise), nonce and roles.
func (kc *keyCheck) account(a account) (acctVerdict, string) {
	p := kc.p
	av := acctVerdict{account: a}
	addr := addrHex(a.addr)
	bal := p.Chain("eth_getBalance", addr, "latest")
	if !bal.IsOK() {
		return av, "eth_getBalance failed: " + replay.Clip(bal.Err(), 100)
	}
	b, err := quantity(rpcResult(bal))
	if err != nil {
		return av, "eth_getBalance answered " + replay.Quote(string(rpcResult(bal)), 40)
	}
	av.balance = b
	if n := p.Chain("eth_getTransactionCount", addr, "latest"); n.IsOK() {
		if q, err := quantity(rpcResult(n)); err == nil && q.IsUint64() {
			av.nonce = q.Uint64()
		}
	}
	av.roles = kc.rolesOf(a.addr)
	return av, ""
}

// rolesOf names the registry's zero-argument functions that return addr.
func (kc *keyCheck) rolesOf(addr [20]byte) []string {
	if kc.roles == nil {
		kc.roles = map[[20]byte][]string{}
		kc.readRoles()
	}
	return kc.roles[addr]
}

// readRoles calls the registry's functions that take no arguments (named
// so, or unnamed) from a fresh address and keeps those answering one
// address: the holders of its roles.
func (kc *keyCheck) readRoles() {
	p := kc.p
	reg := p.Target().Registry
	if reg == "" || len(kc.fns) == 0 {
		return
	}
	from := strangerAddress(p)
	reads := 0
	for _, f := range kc.fns {
		if f.fn.Signature != "" && (!strings.HasSuffix(f.fn.Signature, "()") || slices.Contains(platformPublic, f.fn.Signature)) {
			continue
		}
		if reads == secRoleReads || !p.Room(3) {
			return
		}
		reads++
		call := map[string]any{"from": "0x" + hex.EncodeToString(from[:]), "to": strings.ToLower(reg), "data": fmt.Sprintf("0x%x", f.sel)}
		r := p.Chain("eth_call", call, "latest")
		if !r.IsOK() {
			continue
		}
		var out string
		if json.Unmarshal(rpcResult(r), &out) != nil {
			continue
		}
		w := strings.TrimPrefix(out, "0x")
		if len(w) != 64 || !addressWord(out) {
			continue
		}
		var a [20]byte
		if _, err := hex.Decode(a[:], []byte(w[24:])); err != nil {
			continue
		}
		name := fmt.Sprintf("what the registry's selector 0x%x returns", f.sel)
		if f.fn.Signature != "" {
			name = "the registry's " + f.fn.Signature
		}
		kc.roles[a] = append(kc.roles[a], name)
	}
}

// quantity reads a JSON-RPC quantity ("0x1a").
func quantity(raw json.RawMessage) (*big.Int, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	if !ok || !strings.HasPrefix(s, "0x") {
		return nil, errors.New("not a quantity")
	}
	return n, nil
}
