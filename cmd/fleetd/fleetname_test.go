package main

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"go.yaml.in/yaml/v3"
)

// TestFleetNameHoldsTheSpecialists: with chain.fleet_name set and the
// dial at exercise, the daemon claims the free name on the testbed's
// registry and writes the published set's hash and its log entry into the
// name's metadata; `fleetd specialists --on-chain` reports both matching.
// After a persona is edited and the daemon reloaded, the name follows the
// new record. A name someone else owns is reported as such, exit 1.
func TestFleetNameHoldsTheSpecialists(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon against a dev chain")
	}
	hour := fleet.Trigger{Every: time.Hour} // no run fires during the test
	f := newFleetFixture(t, fleet.Exercise, map[string]fleet.Trigger{"smoke": hour, "ux": hour, "security": hour, "perf": hour, "fuzz": hour})
	const name = "grove-fleet"
	setConfigKey(t, f.config, "chain", "fleet_name", name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := chain.Dial(ctx, f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	log := cl.FeedbackLog(mustParseAddr(t, f.dn.Info.FeedbackLog))
	reg := cl.Registry(mustParseAddr(t, f.tb.Registry()))
	fleetKey, err := chain.LoadKey(f.dn.Info.FleetKeyFile)
	if err != nil {
		t.Fatal(err)
	}

	d := startTestDaemon(t, ctx, f.config)
	waitName := func(not string) (*fleetdaemon.Published, fleetdaemon.NameView) {
		t.Helper()
		var pub *fleetdaemon.Published
		var v fleetdaemon.NameView
		fleettest.WaitFor(t, 60*time.Second, "the set in the fleet's name", func() bool {
			pub, _ = fleetdaemon.NewestPublished(ctx, log, fleetKey.Address())
			if pub == nil || pub.Hash == not {
				return false
			}
			v, _ = fleetdaemon.ReadFleetName(ctx, reg, name)
			return v.Rec != nil && v.Rec.Set == pub.Hash && v.Rec.Entry == pub.Index
		})
		return pub, v
	}
	first, v := waitName("")
	if v.Owner != fleetKey.Address() || v.Rec.Log != log.Address().String() {
		t.Errorf("the name: owner %s, record %+v; want the fleet identity %s and the log %s", v.Owner, *v.Rec, fleetKey.Address(), log.Address())
	}
	o, e, code := run(t, "", "specialists", "--on-chain", "--config", f.config)
	if code != 0 || !strings.Contains(o, "on chain: matches") || !strings.Contains(o, `name "grove-fleet": matches (set `+first.Hash) {
		t.Fatalf("--on-chain: exit %d\n%s%s", code, o, e)
	}

	// Edit a persona and reload: a new record, and the name follows it.
	p := filepath.Join(f.dataDir, "personas", "smoke.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var smoke fleet.Persona
	if err := yaml.Unmarshal(b, &smoke); err != nil {
		t.Fatal(err)
	}
	smoke.Goal += " Also watch the new page."
	if b, err = yaml.Marshal(smoke); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d.reload <- struct{}{}
	second, _ := waitName(first.Hash)
	o, e, code = run(t, "", "specialists", "--on-chain", "--json", "--config", f.config)
	if code != 0 || !strings.Contains(o, `"matches": true`) || !strings.Contains(o, `"set": "`+second.Hash+`"`) {
		t.Errorf("--on-chain --json after the reload: exit %d\n%s%s", code, o, e)
	}

	// At observe the daemon posts the new set (the dial is part of it) but
	// writes nothing to the registry: the name no longer matches.
	if _, err := fleet.NewControl(f.dataDir).SetDial(fleet.Observe, "test", "test"); err != nil {
		t.Fatal(err)
	}
	d.reload <- struct{}{}
	fleettest.WaitFor(t, 30*time.Second, "the set published at observe", func() bool {
		pub, _ := fleetdaemon.NewestPublished(ctx, log, fleetKey.Address())
		return pub != nil && pub.Hash != second.Hash
	})
	if v, _ := fleetdaemon.ReadFleetName(ctx, reg, name); v.Rec == nil || v.Rec.Set != second.Hash {
		t.Errorf("at observe the name changed: %+v", v.Rec)
	}
	var fl struct {
		Published *struct {
			Name      string `json:"name"`
			NameError string `json:"name_error"`
		}
	}
	fleettest.WaitFor(t, 10*time.Second, "the console's name status", func() bool {
		resp, err := http.Get(d.base + "/api/fleet")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&fl)
		return fl.Published != nil && strings.Contains(fl.Published.NameError, "the dial is observe")
	})
	o, e, code = run(t, "", "specialists", "--on-chain", "--config", f.config)
	if code != 1 || !strings.Contains(o, "on chain: matches") || !strings.Contains(o, `name "grove-fleet": DIFFERS: holds set `+second.Hash) {
		t.Errorf("--on-chain at observe: exit %d\n%s%s", code, o, e)
	}
	cancel()
	<-d.done

	// A name the fleet does not own: reported, exit 1.
	other, _ := chain.GenerateKey()
	if _, err := cl.Transfer(context.Background(), f.dn.Sponsor, other.Address(), big.NewInt(1e17)); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(context.Background(), other, "someone-else"); err != nil {
		t.Fatal(err)
	}
	setConfigKey(t, f.config, "chain", "fleet_name", "someone-else")
	o, e, code = run(t, "", "specialists", "--on-chain", "--config", f.config)
	if code != 1 || !strings.Contains(o, `name "someone-else": owned by `+other.Address().String()) {
		t.Errorf("--on-chain with another's name: exit %d\n%s%s", code, o, e)
	}
}

// setConfigKey sets section.key in the YAML config at path.
func setConfigKey(t *testing.T, path, section, key string, value any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	sec, _ := m[section].(map[string]any)
	if sec == nil {
		sec = map[string]any{}
	}
	sec[key] = value
	m[section] = sec
	if b, err = yaml.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
