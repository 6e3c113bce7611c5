package qatools

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

type publishArgs struct {
	Name   string `json:"name" desc:"a name this run minted with qa_create"`
	Source string `json:"source" desc:"program source text" maxlen:"1048576"`
	Field  string `json:"field,omitempty" desc:"metadata field to write the artifact to (default face)" maxlen:"64"`
}

// publish: qa_publish. The ledger check comes first: a name this run did not
// mint is refused before anything is compiled, spent or sent.
func (t *tools) publish(ctx context.Context, a publishArgs) (fleet.Result, error) {
	entry, err := t.run.Sandbox.Owned(a.Name)
	if err != nil {
		return fleet.Fail("refused: %v", err), nil
	}
	if err := t.needChain(); err != nil {
		return fleet.Fail("%v", err), nil
	}
	c, err := t.runCompiler(ctx, a.Source)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		return fleet.Fail("qa_publish: %v", err), nil
	}
	if c.outcome != Compiled {
		res := fleet.Fail("qa_publish: source did not compile (%s)", c.outcome)
		res["compile"] = c.fields
		return res, nil
	}
	if err := t.spendWrite(); err != nil {
		return nil, err
	}
	key, err := chain.LoadKey(filepath.Join(t.run.Sandbox.KeysDir(), entry.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("qa_publish: %w", err)
	}
	field := a.Field
	if field == "" {
		field = "face"
	}
	r, err := t.env.Registry.SetMetadata(ctx, key, a.Name, chain.MetadataKey(field), c.artifact)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		res := fleet.Fail("qa_publish: %s", errorText(err))
		res["revert_reason"] = revertReason(err)
		if r != nil {
			res["tx"], res["gas_used"], res["gas_estimated"] = r.Tx, r.GasUsed, r.GasEstimated
		}
		return res, nil
	}
	return fleet.OK(map[string]any{
		"name": a.Name, "field": field, "tx": r.Tx, "gas_estimated": r.GasEstimated, "gas_used": r.GasUsed,
		"revert_reason": "", "bytes": len(c.artifact), "sha256": c.fields["sha256"],
	}), nil
}
