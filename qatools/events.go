package qatools

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/qafleet/fleetd/fleet"
)

// maxMetadataEvents bounds the distinct (name, key) pairs one
// metadata_events read returns.
const maxMetadataEvents = 400

// metadataEvents: qa_chain metadata_events [name?]. The target registry's
// MetadataSet events from its first block to the latest, one entry per
// distinct (name, key) with the latest block that wrote it, in order of first
// write; with a name, only that name's. It answers which fields the
// platform's names actually use, so probes write where the platform renders.
func (t *tools) metadataEvents(ctx context.Context, params []json.RawMessage, fail func(error) (fleet.Result, error)) (fleet.Result, error) {
	if t.env.Registry == nil {
		return fleet.Fail("target.registry is not configured"), nil
	}
	var only string
	if len(params) > 0 {
		if err := json.Unmarshal(params[0], &only); err != nil {
			return fail(fmt.Errorf("metadata_events parameter 1: want a name (a string)"))
		}
	}
	head, err := t.env.Chain.BlockNumber(ctx)
	if err != nil {
		return fail(err)
	}
	// Read a few times the cap: events repeat (a key rewritten), and the
	// distinct pairs are what is returned.
	evs, truncated, err := t.env.Registry.MetadataEvents(ctx, 0, head, 10*maxMetadataEvents)
	if err != nil {
		return fail(err)
	}
	type pair struct{ name, key string }
	index := map[pair]int{}
	var out []map[string]any
	var names []string
	seenName := map[string]bool{}
	for _, e := range evs {
		if only != "" && e.Name != only {
			continue
		}
		k := pair{e.Name, "0x" + hex.EncodeToString(e.Key[:])}
		if i, ok := index[k]; ok {
			out[i]["block"] = e.Block
			continue
		}
		if len(out) == maxMetadataEvents {
			truncated = true
			continue
		}
		index[k] = len(out)
		out = append(out, map[string]any{"name": e.Name, "key": k.key, "block": e.Block})
		if !seenName[e.Name] {
			seenName[e.Name] = true
			names = append(names, e.Name)
		}
	}
	if out == nil {
		out = []map[string]any{}
	}
	if names == nil {
		names = []string{}
	}
	return fleet.OK(map[string]any{"result": out, "names": names, "truncated": truncated, "head": head}), nil
}
