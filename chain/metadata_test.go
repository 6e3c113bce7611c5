package chain

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetadataEvents: the registry's MetadataSet events come back decoded,
// in chain order, bounded by the range and the limit.
func TestMetadataEvents(t *testing.T) {
	b := mustDevchain(t)
	c := mustDial(t, b.url)
	ctx := context.Background()
	reg, rc, err := c.DeployNameRegistry(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"maple", "juniper"} {
		if _, err := reg.Register(ctx, b.sponsor, n); err != nil {
			t.Fatal(err)
		}
	}
	var blocks []uint64
	for _, w := range []struct{ name, field string }{{"maple", "headline"}, {"juniper", "bio"}, {"maple", "website"}} {
		r, err := reg.SetMetadata(ctx, b.sponsor, w.name, MetadataKey(w.field), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, r.Block)
	}
	head, _ := c.BlockNumber(ctx)
	got, truncated, err := reg.MetadataEvents(ctx, rc.Block, head, 0)
	if err != nil || truncated {
		t.Fatalf("MetadataEvents: %v (truncated %v)", err, truncated)
	}
	want := []MetadataSet{
		{Name: "maple", Key: MetadataKey("headline"), Block: blocks[0]},
		{Name: "juniper", Key: MetadataKey("bio"), Block: blocks[1]},
		{Name: "maple", Key: MetadataKey("website"), Block: blocks[2]},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	got, truncated, _ = reg.MetadataEvents(ctx, rc.Block, head, 2)
	if len(got) != 2 || !truncated {
		t.Errorf("limit 2: %d events, truncated %v", len(got), truncated)
	}
	got, _, _ = reg.MetadataEvents(ctx, blocks[1], blocks[1], 0)
	if len(got) != 1 || got[0].Name != "juniper" {
		t.Errorf("one block: %+v", got)
	}
	if got, _, err := reg.MetadataEvents(ctx, head, head-1, 0); err != nil || len(got) != 0 {
		t.Errorf("empty range: %v %v", got, err)
	}
	// Another contract's logs are not the registry's.
	other := c.Registry(b.sponsor.Address())
	if got, _, err := other.MetadataEvents(ctx, 0, head, 0); err != nil || len(got) != 0 {
		t.Errorf("events of an address with no registry: %v %v", got, err)
	}
}
