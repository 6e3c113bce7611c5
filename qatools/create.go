package qatools

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

type createArgs struct{}

// create mints the next sandbox name under the run's next throwaway key. Order
// matters for crash safety: key file, then ledger (durable), then funding,
// then the mint; cleanup can undo every step that happened.
func (t *tools) create(ctx context.Context, _ createArgs) (fleet.Result, error) {
	if err := t.needChain(); err != nil {
		return fleet.Fail("%v", err), nil
	}
	if t.env.Registry == nil || t.env.Sponsor == nil {
		return fleet.Fail("qa_create needs target.registry and chain.sponsor_key_file"), nil
	}
	fund := t.env.Limits.FundWei
	if left, limited := t.run.Meter.Remaining(fleet.ResWei); limited {
		fund = min(fund, left)
	}
	if fund == 0 {
		return nil, &fleet.BudgetError{Resource: fleet.ResWei, Limit: t.run.Meter.Limits().MaxWei, Used: t.run.Meter.Used(fleet.ResWei), Want: 1}
	}
	if err := t.run.Meter.Spend(fleet.ResWei, fund); err != nil {
		return nil, err
	}
	if err := t.spendWrite(); err != nil {
		t.run.Meter.Refund(fleet.ResWei, fund)
		return nil, err
	}
	sb := t.run.Sandbox
	n := len(sb.Entries())
	// Derived from the sponsor's secret, so any fleetd holding the sponsor
	// key can recompute and sweep it if this process dies with its disk.
	key, err := chain.DeriveThrowawayKey(t.env.Sponsor, t.run.ID, n)
	if err != nil {
		return nil, err
	}
	keyFile := fmt.Sprintf("k%d.key", n)
	if err := chain.WriteKeyFile(filepath.Join(sb.KeysDir(), keyFile), key); err != nil {
		return nil, fmt.Errorf("qa_create: %w", err) // the sandbox is broken: end the run
	}
	name, err := sb.Reserve(key.Address().String(), keyFile)
	if err != nil {
		return nil, fmt.Errorf("qa_create: %w", err)
	}
	// The funding names the run and the key's index in its calldata, so the
	// chain alone says which keys a sponsor funded (ReconcileChain). Its
	// nonce goes into the ledger before it is sent: a funding that fails
	// here may still land later, and cleanup must not close the run before
	// it can no longer land (Cleanup).
	if _, err := t.env.Chain.SendRawNoted(ctx, t.env.Sponsor, key.Address(), chain.ThrowawayMarker(t.run.ID, n), weiBig(fund), ledgerNote(name, sb.NoteFunding)); err != nil {
		sb.SetState(name, sandbox.StateFailed)
		t.run.Meter.Refund(fleet.ResWei, fund)
		t.run.Meter.Refund(fleet.ResWrites, 1)
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		return fleet.Fail("fund throwaway key: %s", errorText(err)), nil
	}
	// The mint's nonce goes into the ledger before it leaves too: a mint
	// whose answer is lost, or whose wait the run's end cancels, may land
	// after cleanup has looked (releaseName).
	r, err := t.env.Registry.RegisterNoted(ctx, key, name, ledgerNote(name, sb.NoteMint))
	if err != nil {
		if chain.IsRevert(err, "") || errors.Is(err, chain.ErrRefused) {
			sb.SetState(name, sandbox.StateFailed) // nothing was registered
		}
		if err := ctxErr(ctx); err != nil {
			return nil, err // the name stays "minting": cleanup checks the chain
		}
		res := fleet.Fail("register %s: %s", name, errorText(err))
		res["name"] = name
		res["revert_reason"] = revertReason(err)
		return res, nil
	}
	owner, err := t.env.Registry.OwnerOf(ctx, name)
	verified := err == nil && owner == key.Address()
	if err := sb.SetState(name, sandbox.StateMinted); err != nil {
		return nil, fmt.Errorf("qa_create: %w", err)
	}
	res := fleet.OK(map[string]any{
		"name": name, "owner": key.Address().String(), "tx": r.Tx, "gas_used": r.GasUsed,
		"owner_verified": verified, "funded_wei": weiString(fund),
	})
	t.writesLeft(res)
	return res, nil
}

// ledgerNote adapts a ledger's record of a transaction that may still land
// (NoteFunding, NoteMint) to the note a noted send calls: the nonce before
// the transaction leaves, nil once the node refused it outright.
func ledgerNote(name string, set func(name string, nonce *uint64) error) func(nonce uint64, pending bool) error {
	return func(nonce uint64, pending bool) error {
		if !pending {
			return set(name, nil)
		}
		return set(name, &nonce)
	}
}

// cleanupKey marks a context as the run's cleanup, which DialHook lets
// through at any dial (releasing own names, sweeping to the sponsor, the
// sponsor funding a run key's release).
type cleanupKey struct{}

// DialHook is the chain write guard's hook for the dial: at observe, the only
// transactions allowed are feedback to fleetd's own log, plus, during a run's
// cleanup, releasing names and sweeping funds back to the sponsor. It reads
// the dial on every transaction, so lowering the dial stops the next write.
func DialHook(dial fleet.DialSource, feedbackLog, sponsor fleet.Address) chain.WriteHook {
	return func(ctx context.Context, tx chain.Tx) error {
		if tx.To != nil && *tx.To == feedbackLog && (tx.Method == "submitFeedback" || tx.Method == "submitFeedbackFor") {
			return nil
		}
		if ctx.Value(cleanupKey{}) != nil {
			if tx.Method == "release" || (len(tx.Data) == 0 && tx.To != nil && *tx.To == sponsor) {
				return nil
			}
			// The sponsor funding a run's key for the release of a name it
			// holds (Cleanup's top-up): the funding marker, no contract call.
			if _, _, ok := chain.ParseThrowawayMarker(tx.Data); ok && tx.From == sponsor && !sponsor.IsZero() {
				return nil
			}
		}
		d, err := dial.Dial()
		if d.Allows(fleet.Exercise) {
			return nil
		}
		msg := fmt.Sprintf("dial is %s: no on-chain write except feedback", d)
		if err != nil {
			msg += " (" + err.Error() + ")"
		}
		return errors.New(msg)
	}
}

// Cleaned is what Cleanup did and could not do.
type Cleaned struct {
	Released []string // names released now
	Held     []string // names a run key still owns: every release failed
	Swept    int      // keys swept to the sponsor
	Kept     []string // key files left funded because they hold a name
}

// LedgerNotes is where Cleanup records each name's fate: a run's ledger.
type LedgerNotes interface {
	SetState(name, state string) error
	NoteRelease(name string, attempts int, reason string) error
}

// releaseAttempts bounds the tries to release one name in one cleanup;
// releaseBackoff is the first pause between them, doubled each time, with
// jitter (about 0.2 + 0.4 + 0.8 s).
const (
	releaseAttempts = 4
	releaseBackoff  = 200 * time.Millisecond
)

// Cleanup undoes a run's on-chain footprint: it releases every name in
// entries that a run key still owns and sweeps every key in keyFiles back to
// the sponsor, at any dial and outside the run's budget. A release is tried
// up to releaseAttempts times with backoff (the owner is read again before
// each, so a release whose answer was lost is not sent twice); a key whose
// name could not be released is never swept, since releasing it later needs
// its gas money: the failure goes to notes (optional) and the error names
// the name, so the run stays open for reconcile. Nor is a key swept (or
// called empty) while its funding may still land: the sponsor's mined nonce
// has not passed the funding's (LedgerEntry.FundingNonce; a node restart
// can drop a funding from its pool and mine it again from its journal
// later); that is an error too, and reconcile sweeps it once the nonce
// passes. A key that holds a name but
// not the gas to release it (an older fleetd swept it) is funded by the
// sponsor with what one release costs, the funding carrying the run's
// marker. It is idempotent. Used at the end of every run and, for crashed
// runs, by Reconcile.
func Cleanup(ctx context.Context, env *Env, run, keysDir string, entries []sandbox.LedgerEntry, keyFiles []string, notes LedgerNotes) (Cleaned, error) {
	var out Cleaned
	if env.Chain == nil {
		if len(entries) == 0 && len(keyFiles) == 0 {
			return out, nil
		}
		return out, errNoChain
	}
	ctx = context.WithValue(ctx, cleanupKey{}, true)
	var errs []error
	holding := map[string]bool{}      // key file names that still own a name
	fundings := map[string][]uint64{} // key file name: sponsor nonces of its fundings
	for _, e := range entries {
		if e.FundingNonce != nil {
			fundings[e.KeyFile] = append(fundings[e.KeyFile], *e.FundingNonce)
		}
	}
	for _, e := range entries {
		if e.State != sandbox.StateMinted && e.State != sandbox.StateMinting {
			continue
		}
		key, err := chain.LoadKey(filepath.Join(keysDir, e.KeyFile))
		if err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", e.Name, err))
			holding[e.KeyFile] = true
			continue
		}
		n := -1
		fmt.Sscanf(e.KeyFile, "k%d.key", &n)
		state, attempts, err := releaseName(ctx, env, run, n, key, e)
		if err != nil {
			errs = append(errs, fmt.Errorf("release %s (owned by %s, %d attempts): %w", e.Name, key.Address(), attempts, err))
			out.Held = append(out.Held, e.Name)
			holding[e.KeyFile] = true
			if notes != nil {
				if nerr := notes.NoteRelease(e.Name, attempts, err.Error()); nerr != nil {
					errs = append(errs, nerr)
				}
			}
			continue
		}
		if state == sandbox.StateReleased {
			out.Released = append(out.Released, e.Name)
		}
		if notes != nil {
			if e.ReleaseError != "" {
				notes.NoteRelease(e.Name, attempts, "")
			}
			if err := notes.SetState(e.Name, state); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, kf := range keyFiles {
		if holding[filepath.Base(kf)] {
			out.Kept = append(out.Kept, kf) // its gas releases the name later
			continue
		}
		key, err := chain.LoadKey(kf)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep: %w", err))
			continue
		}
		if err := fundingSettled(ctx, env, key, fundings[filepath.Base(kf)]); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, _, err := env.Chain.SweepAll(ctx, key, env.Sponsor.Address()); err != nil {
			errs = append(errs, err)
			continue
		}
		out.Swept++
	}
	return out, errors.Join(errs...)
}

// ErrFundingInFlight is in Cleanup's error when a key was neither swept
// nor called empty because its funding may still land: the sponsor's mined
// nonce has not passed the funding's. SettleFundings ends the wait.
var ErrFundingInFlight = errors.New("may still land")

// SettleFundings has the sponsor send itself a 0-wei transfer (allowed at
// any dial, as cleanup) and waits until it is mined; then every sponsor
// nonce below it is mined or taken, so no funding a run noted can land any
// more and cleanup can sweep its key or call it empty. A funding noted at
// a nonce the node never took (the run was cancelled between the note and
// the send) otherwise keeps its run open until the sponsor sends again,
// which, for a daemon that is stopping, it never does. It costs one plain
// transfer's gas.
func SettleFundings(ctx context.Context, env *Env) error {
	if env.Chain == nil {
		return errNoChain
	}
	if env.Sponsor == nil {
		return errors.New("settle fundings: no sponsor key")
	}
	ctx = context.WithValue(ctx, cleanupKey{}, true)
	if _, err := env.Chain.Transfer(ctx, env.Sponsor, env.Sponsor.Address(), new(big.Int)); err != nil {
		return fmt.Errorf("settle fundings: %w", err)
	}
	return nil
}

// fundingSettled returns nil once none of the sponsor's transactions with
// nonces can still land (they were mined, or others took their nonces), so
// key's balance read after it is final; an error names the first that can.
func fundingSettled(ctx context.Context, env *Env, key *chain.Key, nonces []uint64) error {
	for _, n := range nonces {
		ok, err := env.Chain.NonceSettled(ctx, env.Sponsor.Address(), n)
		if err != nil {
			return fmt.Errorf("sweep %s: funding: %w", key.Address(), err)
		}
		if !ok {
			return fmt.Errorf("sweep %s: its funding (sponsor nonce %d) is not mined yet and %w", key.Address(), n, ErrFundingInFlight)
		}
	}
	return nil
}

// releaseName gives back name e, owned (if the mint landed) by key n of run,
// and returns the state to record: released, or failed when the name was
// never minted or is someone else's now. It retries with backoff and jitter;
// the owner is read before every try, so a release that landed while its
// answer was lost counts as done instead of being sent again.
//
// A minting name found unowned is not called never minted while its mint
// may still land (LedgerEntry.MintNonce; the key's mined nonce has not
// passed it): the mint's answer was lost or its wait cancelled, and the
// node may mine it a moment later (it was in the pool) or after a restart
// (from its journal). Then the key is swept at the mint's nonce, which
// takes the nonce from the mint for good; if the node refuses that, the
// mint is in its pool, and the next try finds the name owned and releases
// it. Before, such a name was called failed, the key was swept at the
// nonce after the mint's, and the mint landed: a name held for good by an
// empty key in a closed run (TestNodeRestartUnderDaemon's history check).
func releaseName(ctx context.Context, env *Env, run string, n int, key *chain.Key, e sandbox.LedgerEntry) (state string, attempts int, err error) {
	toppedUp, sent := false, false
	for attempts = 1; ; attempts++ {
		var owner fleet.Address
		err = nil
		// Settled first, owner second: a mint that landed between the two
		// reads shows as an owner, never as a settled nonce and no owner.
		mintSettled := true
		if e.State == sandbox.StateMinting && e.MintNonce != nil && !sent {
			mintSettled, err = env.Chain.NonceSettled(ctx, key.Address(), *e.MintNonce)
		}
		if err == nil {
			owner, err = env.Registry.OwnerOf(ctx, e.Name)
		}
		if err == nil {
			switch owner {
			case key.Address():
				sent = true
				_, err = env.Registry.Release(ctx, key, e.Name)
				if err == nil {
					return sandbox.StateReleased, attempts, nil
				}
				if !toppedUp && n >= 0 && strings.Contains(strings.ToLower(err.Error()), "insufficient funds") {
					toppedUp = true
					if terr := topUp(ctx, env, run, n, key); terr != nil {
						err = fmt.Errorf("%w; funding its key for the release: %w", err, terr)
					} else if attempts < releaseAttempts {
						continue // funded: try again at once
					}
				}
			case fleet.Address{}:
				switch {
				case e.State != sandbox.StateMinting || sent:
					return sandbox.StateReleased, attempts, nil // released, perhaps by a try whose answer was lost
				case mintSettled:
					return sandbox.StateFailed, attempts, nil // the mint never landed, and no longer can
				}
				if err = takeMintNonce(ctx, env, key, *e.MintNonce); err == nil {
					continue // the nonce is taken: read again
				}
				if errors.Is(err, errCannotPay) && !toppedUp && n >= 0 {
					// The key's funding never landed (a restarted node
					// dropped it with the mint): fund it for the sweep,
					// which takes the nonce and hands the rest back; or the
					// mint, funded now, lands and the next look releases it.
					toppedUp = true
					if terr := topUp(ctx, env, run, n, key); terr != nil {
						err = fmt.Errorf("%w; funding its key to take the nonce: %w", err, terr)
					} else if attempts < releaseAttempts {
						continue
					}
				}
			default:
				// Someone else holds it now (an admin burn and re-register):
				// not ours to touch.
				return sandbox.StateFailed, attempts, nil
			}
		}
		if attempts >= releaseAttempts || errors.Is(err, chain.ErrRefused) || ctx.Err() != nil {
			return "", attempts, err
		}
		wait := releaseBackoff << (attempts - 1)
		wait += time.Duration(mrand.Int64N(int64(wait) / 2)) // jitter: cleanups of many runs do not retry in step
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return "", attempts, errors.Join(err, ctx.Err())
		}
	}
}

// errCannotPay is takeMintNonce's answer for a key whose balance cannot
// pay for the transaction that would take its mint's nonce.
var errCannotPay = errors.New("the key cannot pay for a transaction taking its nonce")

// takeMintNonce sweeps key to the sponsor at the nonce of its mint, so a
// mint that did not land by now never will.
func takeMintNonce(ctx context.Context, env *Env, key *chain.Key, nonce uint64) error {
	if env.Sponsor == nil {
		return fmt.Errorf("its mint (nonce %d) may still land: no sponsor key to sweep to", nonce)
	}
	r, _, err := env.Chain.SweepAllAt(ctx, key, env.Sponsor.Address(), nonce)
	switch {
	case err != nil:
		return fmt.Errorf("its mint (nonce %d) may still land: %w", nonce, err)
	case r == nil:
		return fmt.Errorf("its mint (nonce %d) may still land: %w", nonce, errCannotPay)
	}
	return nil
}

// topUpGas is what one release may cost at most, with the client's margin.
const topUpGas = 400_000

// topUp funds key n of run with what one release costs at three times
// today's gas price (the rest is swept back after the release), from the
// sponsor, with the run's funding marker so ReconcileChain still finds it.
func topUp(ctx context.Context, env *Env, run string, n int, key *chain.Key) error {
	if env.Sponsor == nil {
		return errors.New("no sponsor key")
	}
	price, err := env.Chain.GasPrice(ctx)
	if err != nil {
		return err
	}
	wei := new(big.Int).Mul(price, big.NewInt(3*topUpGas))
	_, err = env.Chain.SendRaw(ctx, env.Sponsor, key.Address(), chain.ThrowawayMarker(run, n), wei)
	return err
}

// CleanupRun runs Cleanup for a live run and closes its sandbox when nothing
// is left behind; otherwise the sandbox stays unclosed for reconciliation,
// with the names still held and why recorded in its ledger.
func CleanupRun(ctx context.Context, env *Env, run *Run) error {
	sb := run.Sandbox
	keys, _ := filepath.Glob(filepath.Join(sb.KeysDir(), "*.key"))
	if _, err := Cleanup(ctx, env, run.ID, sb.KeysDir(), sb.Entries(), keys, sb.Ledger); err != nil {
		sb.Abandon()
		return fmt.Errorf("cleanup run %s: %w", run.ID, err)
	}
	return sb.Close()
}

// Reconciled is what Reconcile did for one crashed run.
type Reconciled struct {
	sandbox.Crashed
	Cleaned
	Closed bool  // nothing is left: the sandbox is marked closed
	Err    error // why it is not, when it is not
}

// Reconcile finishes the cleanup of runs that crashed (or whose cleanup
// failed): for every sandbox under base without a closed marker and not
// held by a live process it releases names, sweeps keys and, when nothing
// is left, marks it closed. It returns every run it found, with what it did
// and what is still held; the error joins the failures.
func Reconcile(ctx context.Context, env *Env, base string) ([]Reconciled, error) {
	crashed, ferr := sandbox.FindCrashed(base)
	var errs []error
	if ferr != nil {
		errs = append(errs, ferr)
	}
	var out []Reconciled
	for _, c := range crashed {
		defer c.Release()
		r := Reconciled{Crashed: c}
		var notes LedgerNotes
		if l, err := c.Ledger(); err == nil {
			notes = l
		}
		keysDir := filepath.Join(c.Dir, "keys")
		r.Cleaned, r.Err = Cleanup(ctx, env, c.RunID, keysDir, c.Names, c.KeyFiles, notes)
		if r.Err == nil {
			r.Err = sandbox.MarkClosed(c.Dir)
			r.Closed = r.Err == nil
		}
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", c.RunID, r.Err))
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}
