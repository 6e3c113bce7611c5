package qatools

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// maxPublishText bounds qa_publish's text form. Probes write short canaries;
// the bound keeps one write's gas (a storage slot per 32 bytes) small next to
// what a throwaway key is funded with.
const maxPublishText = 4096

// publishArgs are qa_publish's two forms: {name, source[, field]} compiles
// source and writes the artifact; {name, key, text} writes text as is.
type publishArgs struct {
	Name   string  `json:"name" desc:"a name this run minted with qa_create"`
	Source string  `json:"source,omitempty" desc:"program source text: compiled, and the artifact written (give source, or key and text)" maxlen:"1048576"`
	Field  string  `json:"field,omitempty" desc:"with source: metadata field to write the artifact to (default face)" maxlen:"64"`
	Key    string  `json:"key,omitempty" desc:"with text: the metadata key, a field name (hashed with keccak256, as the registry's keys are) or an explicit 0x-prefixed bytes32" maxlen:"128"`
	Text   *string `json:"text,omitempty" desc:"with key: UTF-8 text written under key as is, no compiler involved" maxlen:"4096"`
}

// errPublishForm is a qa_publish call that is neither form.
var errPublishForm = errors.New("give either source (and optionally field) or key and text")

// check validates the combination of arguments; the schema checks each alone.
func (a publishArgs) check() error {
	switch {
	case a.Text != nil && a.Source != "":
		return fmt.Errorf("source and text together: %w", errPublishForm)
	case a.Text != nil && a.Key == "":
		return fmt.Errorf("text without key: %w", errPublishForm)
	case a.Text == nil && a.Key != "":
		return fmt.Errorf("key without text: %w", errPublishForm)
	case a.Text != nil && a.Field != "":
		return fmt.Errorf("field goes with source; with text, name the field in key: %w", errPublishForm)
	case a.Text == nil && a.Source == "":
		return fmt.Errorf("no source and no text: %w", errPublishForm)
	}
	return nil
}

// MetadataKey resolves a metadata key argument: an explicit 0x-prefixed
// bytes32 (exactly 64 hex digits) is taken as is; anything else is a field
// name, hashed with keccak256 of its UTF-8 bytes as the registry's keys are.
// It fails for an empty name, invalid UTF-8, or a 0x value of the wrong
// length, naming what was wrong.
func MetadataKey(s string) ([32]byte, error) {
	var k [32]byte
	switch {
	case s == "":
		return k, errors.New("empty metadata key")
	case !utf8.ValidString(s):
		return k, errors.New("metadata key is not valid UTF-8")
	case explicitKey(s):
		if len(s) != 66 {
			return k, fmt.Errorf("metadata key %q: an explicit key is 0x and 64 hex digits, got %d digits", s, len(s)-2)
		}
		hex.Decode(k[:], []byte(s[2:]))
		return k, nil
	}
	return chain.MetadataKey(s), nil
}

// explicitKey reports whether s is written as a 0x hex value (a bytes32 key,
// when it has the right length) rather than a field name.
func explicitKey(s string) bool {
	return len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && strings.Trim(s[2:], "0123456789abcdefABCDEF") == ""
}

// publish: qa_publish. The ledger check comes first: a name this run did not
// mint is refused before anything is validated further, compiled, spent or
// sent.
func (t *tools) publish(ctx context.Context, a publishArgs) (fleet.Result, error) {
	entry, err := t.run.Sandbox.Owned(a.Name)
	if err != nil {
		return fleet.Fail("refused: %v", err), nil
	}
	if err := a.check(); err != nil {
		return fleet.Fail("qa_publish: %v", err), nil
	}
	if err := t.needChain(); err != nil {
		return fleet.Fail("%v", err), nil
	}
	var (
		mkey   [32]byte
		field  string
		value  []byte
		digest any
	)
	if a.Text != nil {
		if len(*a.Text) > maxPublishText {
			return fleet.Fail("qa_publish: text is %d bytes, at most %d", len(*a.Text), maxPublishText), nil
		}
		if mkey, err = MetadataKey(a.Key); err != nil {
			return fleet.Fail("qa_publish: %v", err), nil
		}
		if !explicitKey(a.Key) {
			field = a.Key
		}
		value = []byte(*a.Text)
	} else {
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
		field = a.Field
		if field == "" {
			field = "face"
		}
		mkey, value, digest = chain.MetadataKey(field), c.artifact, c.fields["sha256"]
	}
	if err := t.spendWrite(); err != nil {
		return nil, err
	}
	key, err := chain.LoadKey(filepath.Join(t.run.Sandbox.KeysDir(), entry.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("qa_publish: %w", err)
	}
	r, err := t.env.Registry.SetMetadata(ctx, key, a.Name, mkey, value)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		res := fleet.Fail("qa_publish: %s", errorText(err))
		res["revert_reason"] = revertReason(err)
		if r != nil {
			res["tx"], res["gas_used"], res["gas_estimated"] = r.Tx, r.GasUsed, r.GasEstimated
		}
		t.writesLeft(res)
		return res, nil
	}
	res := fleet.OK(map[string]any{
		"name": a.Name, "field": field, "key": "0x" + hex.EncodeToString(mkey[:]),
		"tx": r.Tx, "gas_estimated": r.GasEstimated, "gas_used": r.GasUsed,
		"revert_reason": "", "bytes": len(value),
	})
	if digest != nil {
		res["sha256"] = digest
	}
	t.writesLeft(res)
	return res, nil
}

// writesLeft adds what is left of the run's write budget to a result, so a
// planner can stop writing before the budget ends the run; unlimited budgets
// add nothing.
func (t *tools) writesLeft(res fleet.Result) {
	if left, limited := t.run.Meter.Remaining(fleet.ResWrites); limited {
		res["writes_left"] = left
	}
}
