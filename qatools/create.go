package qatools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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
	// chain alone says which keys a sponsor funded (ReconcileChain).
	if _, err := t.env.Chain.SendRaw(ctx, t.env.Sponsor, key.Address(), chain.ThrowawayMarker(t.run.ID, n), weiBig(fund)); err != nil {
		sb.SetState(name, sandbox.StateFailed)
		t.run.Meter.Refund(fleet.ResWei, fund)
		t.run.Meter.Refund(fleet.ResWrites, 1)
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		return fleet.Fail("fund throwaway key: %s", errorText(err)), nil
	}
	r, err := t.env.Registry.Register(ctx, key, name)
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

// cleanupKey marks a context as the run's cleanup, which DialHook lets
// through at any dial (releasing own names, sweeping to the sponsor only).
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

// Cleanup undoes a run's on-chain footprint: it releases every name in
// entries that a run key still owns and sweeps every key in keyFiles back to
// the sponsor, at any dial and outside the run's budget. It is idempotent;
// setState (optional) records each name's final state. Used at the end of
// every run and, for crashed runs, at start.
func Cleanup(ctx context.Context, env *Env, keysDir string, entries []sandbox.LedgerEntry, keyFiles []string, setState func(name, state string) error) error {
	if env.Chain == nil {
		if len(entries) == 0 && len(keyFiles) == 0 {
			return nil
		}
		return errNoChain
	}
	ctx = context.WithValue(ctx, cleanupKey{}, true)
	var errs []error
	for _, e := range entries {
		if e.State != sandbox.StateMinted && e.State != sandbox.StateMinting {
			continue
		}
		key, err := chain.LoadKey(filepath.Join(keysDir, e.KeyFile))
		if err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", e.Name, err))
			continue
		}
		owner, err := env.Registry.OwnerOf(ctx, e.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("release %s: %w", e.Name, err))
			continue
		}
		state := sandbox.StateReleased
		switch owner {
		case key.Address():
			if _, err := env.Registry.Release(ctx, key, e.Name); err != nil {
				errs = append(errs, fmt.Errorf("release %s: %w", e.Name, err))
				continue
			}
		case fleet.Address{}:
			if e.State == sandbox.StateMinting {
				state = sandbox.StateFailed // the mint never landed
			}
		default:
			// Someone else holds it now (an admin burn and re-register):
			// not ours to touch.
			state = sandbox.StateFailed
		}
		if setState != nil {
			if err := setState(e.Name, state); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, kf := range keyFiles {
		key, err := chain.LoadKey(kf)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep: %w", err))
			continue
		}
		if _, _, err := env.Chain.SweepAll(ctx, key, env.Sponsor.Address()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CleanupRun runs Cleanup for a live run and closes its sandbox when nothing
// is left behind; otherwise the sandbox stays unclosed for reconciliation.
func CleanupRun(ctx context.Context, env *Env, run *Run) error {
	sb := run.Sandbox
	keys, _ := filepath.Glob(filepath.Join(sb.KeysDir(), "*.key"))
	if err := Cleanup(ctx, env, sb.KeysDir(), sb.Entries(), keys, sb.SetState); err != nil {
		sb.Abandon()
		return fmt.Errorf("cleanup run %s: %w", run.ID, err)
	}
	return sb.Close()
}

// Reconcile finishes the cleanup of runs that crashed: for every sandbox
// under base without a closed marker it releases names, sweeps keys and
// marks it closed. It returns the runs it reconciled.
func Reconcile(ctx context.Context, env *Env, base string) ([]sandbox.Crashed, error) {
	crashed, ferr := sandbox.FindCrashed(base)
	var errs []error
	if ferr != nil {
		errs = append(errs, ferr)
	}
	var done []sandbox.Crashed
	for _, c := range crashed {
		defer c.Release()
		keysDir := filepath.Join(c.Dir, "keys")
		if err := Cleanup(ctx, env, keysDir, c.Names, c.KeyFiles, nil); err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", c.RunID, err))
			continue
		}
		if err := sandbox.MarkClosed(c.Dir); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, c)
	}
	return done, errors.Join(errs...)
}
