package qatools

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

type chainArgs struct {
	Method string          `json:"method" desc:"a read-only JSON-RPC method or a named read: owner_of, metadata, metadata_events, feedback_count, feedback_range, simulate" maxlen:"64"`
	Params json.RawMessage `json:"params,omitempty" jsontype:"array" desc:"the method's parameters as a JSON array"`
}

// chainRead: qa_chain. Named reads are decoded for the model; anything else
// goes to chain.ReadRPC, which refuses every method off its read allowlist.
func (t *tools) chainRead(ctx context.Context, a chainArgs) (fleet.Result, error) {
	if err := t.needChain(); err != nil {
		return fleet.Fail("%v", err), nil
	}
	var params []json.RawMessage
	if len(a.Params) > 0 && string(a.Params) != "null" {
		if err := json.Unmarshal(a.Params, &params); err != nil {
			return fleet.Fail("qa_chain: params must be a JSON array: %v", err), nil
		}
	}
	str := func(i int) (string, error) {
		var s string
		if i >= len(params) {
			return "", fmt.Errorf("%s needs parameter %d", a.Method, i+1)
		}
		if err := json.Unmarshal(params[i], &s); err != nil {
			return "", fmt.Errorf("%s parameter %d: want a string", a.Method, i+1)
		}
		return s, nil
	}
	num := func(i int) (uint64, error) {
		var n uint64
		if i >= len(params) {
			return 0, fmt.Errorf("%s needs parameter %d", a.Method, i+1)
		}
		if err := json.Unmarshal(params[i], &n); err != nil {
			return 0, fmt.Errorf("%s parameter %d: want a non-negative integer", a.Method, i+1)
		}
		return n, nil
	}
	fail := func(err error) (fleet.Result, error) {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		res := fleet.Fail("qa_chain %s: %s", a.Method, errorText(err))
		if errors.Is(err, chain.ErrUnreachable) {
			// The node gave no answer: say so as qa_fetch does for the
			// target, so a planner tells it from an answer (smoke's
			// control check).
			res["hint"] = netHint(err)
		}
		return res, nil
	}
	switch a.Method {
	case "owner_of":
		name, err := str(0)
		if err != nil {
			return fail(err)
		}
		if t.env.Registry == nil {
			return fleet.Fail("target.registry is not configured"), nil
		}
		owner, err := t.env.Registry.OwnerOf(ctx, name)
		if err != nil {
			return fail(err)
		}
		return fleet.OK(map[string]any{"result": owner.String(), "registered": !owner.IsZero()}), nil
	case "metadata":
		name, err := str(0)
		if err != nil {
			return fail(err)
		}
		field, err := str(1)
		if err != nil {
			return fail(err)
		}
		if t.env.Registry == nil {
			return fleet.Fail("target.registry is not configured"), nil
		}
		mkey, err := MetadataKey(field)
		if err != nil {
			return fail(err)
		}
		v, err := t.env.Registry.Metadata(ctx, name, mkey)
		if err != nil {
			return fail(err)
		}
		text, _ := truncText(v, t.env.Limits.MaxReply)
		return fleet.OK(map[string]any{"result": text, "bytes": len(v)}), nil
	case "metadata_events":
		return t.metadataEvents(ctx, params, fail)
	case "feedback_count":
		if t.env.Log == nil {
			return fleet.Fail("chain.feedback_log is not configured"), nil
		}
		n, err := t.env.Log.Count(ctx)
		if err != nil {
			return fail(err)
		}
		return fleet.OK(map[string]any{"result": n}), nil
	case "feedback_range":
		if t.env.Log == nil {
			return fleet.Fail("chain.feedback_log is not configured"), nil
		}
		start, err := num(0)
		if err != nil {
			return fail(err)
		}
		count, err := num(1)
		if err != nil {
			return fail(err)
		}
		es, err := t.env.Log.Range(ctx, start, min(count, 50))
		if err != nil {
			return fail(err)
		}
		return fleet.OK(map[string]any{"result": es, "clamped": count > 50}), nil
	case "simulate":
		sig, err := str(0)
		if err != nil {
			return fail(err)
		}
		if t.env.Registry == nil {
			return fleet.Fail("target.registry is not configured"), nil
		}
		data, err := chain.ZeroCalldata(sig)
		if err != nil {
			return fail(err)
		}
		stranger, err := chain.GenerateKey() // never funded, never used to sign
		if err != nil {
			return nil, err
		}
		out, err := t.env.Chain.CallAs(ctx, stranger.Address(), t.env.Registry.Address(), data)
		if err != nil && !chain.IsRevert(err, "") {
			return fail(err)
		}
		return fleet.OK(map[string]any{
			"signature": sig, "from": stranger.Address().String(), "to": t.env.Registry.Address().String(),
			"reverted": err != nil, "revert_reason": revertReason(err), "returned": "0x" + hex.EncodeToString(out),
		}), nil
	}
	out, err := t.env.Chain.ReadRPC(ctx, a.Method, a.Params)
	if err != nil {
		return fail(err)
	}
	return fleet.OK(map[string]any{"result": out}), nil
}

func truncText(b []byte, max int) (string, bool) {
	if len(b) > max {
		return string(b[:max]), true
	}
	return string(b), false
}
