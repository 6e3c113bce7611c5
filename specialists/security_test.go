package specialists

import (
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

func TestSpoofed(t *testing.T) {
	res := func(st int, reply string) fleet.Result {
		return fleet.Result{"ok": true, "status": st, "reply": reply}
	}
	base := res(200, "You are anonymous.")
	for _, tc := range []struct {
		name  string
		reply fleet.Result
		sev   fleet.Severity
		ok    bool
	}{
		{"echo only", res(200, "You are admin."), "", false},
		{"same", res(200, "You are anonymous."), "", false},
		{"new content", res(200, "Admin session for alice: full control granted. You are admin."), fleet.SeverityHigh, true},
		{"secret", res(200, "Internal token: tbk_9f1c2e3d4a5b6c7d8e9f0a1b2c3d4e5f. You are admin."), fleet.SeverityCritical, true},
		{"stricter", res(400, "unknown field from"), "", false},
	} {
		_, sev, ok := spoofed(base, tc.reply, []string{"admin"}, true)
		if ok != tc.ok || sev != tc.sev {
			t.Errorf("%s: %v %v, want %v %v", tc.name, ok, sev, tc.ok, tc.sev)
		}
	}
	if _, _, ok := spoofed(res(403, "forbidden"), res(200, "ok here you go"), []string{"admin"}, false); !ok {
		t.Error("a refusal turned into success is not spoofing")
	}
}
