package doctor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestDataDir: a writable data dir passes with its free space, the dial
// and kill switch read as they stand (a pause is a failed line with its
// fix), the outbox counts what waits; a data dir that cannot be made is
// one fatal line, and nothing after it is read.
func TestDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctl := fleet.NewControl(dir)
	cs := DataDir(dir, ctl)
	// The free space is the machine's: below MinFreeBytes the line fails
	// saying so, whatever this test does.
	if len(cs) != 4 || !cs[0].Fatal || !strings.Contains(cs[0].Detail, dir) || cs[0].OK != strings.Contains(cs[0].Detail, "writable") || cs[1].Name != "dial" || !strings.Contains(cs[1].Detail, "read-only probes") || !cs[2].OK || cs[3].Detail != "empty" {
		t.Fatalf("fresh data dir: %+v", cs)
	}
	if err := ctl.Pause("test", "test"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "outbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.json", "b.json", "c.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, "outbox", f), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cs = DataDir(dir, ctl)
	if cs[2].OK || cs[2].Fix == "" || !strings.Contains(cs[2].Detail, "paused") || !strings.HasPrefix(cs[3].Detail, "2 findings wait") {
		t.Fatalf("paused, two queued: %+v", cs)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cs = DataDir(filepath.Join(file, "data"), fleet.NewControl(file))
	if len(cs) != 1 || cs[0].OK || !cs[0].Fatal || cs[0].Fix == "" {
		t.Fatalf("a data dir under a file: %+v", cs)
	}
}

// TestTrust: the fleet's address in chain.trusted_senders, or an empty
// list, passes; a list without it fails naming the address to add.
func TestTrust(t *testing.T) {
	addr := fleet.Address{0xaa}
	other := fleet.Address{0xbb}
	if c := Trust(addr, nil); !c.OK || !strings.Contains(c.Detail, "is empty") {
		t.Errorf("empty list: %+v", c)
	}
	if c := Trust(addr, []string{other.String(), "not an address", addr.String()}); !c.OK || !strings.Contains(c.Detail, "is in chain.trusted_senders") {
		t.Errorf("listed: %+v", c)
	}
	if c := Trust(addr, []string{other.String()}); c.OK || !strings.Contains(c.Fix, addr.String()) {
		t.Errorf("not listed: %+v", c)
	}
}

// TestTargetURLs: each URL the probes use is fetched through the
// allowlist: one that answers passes, whatever its status; one nothing
// answers at fails (not fatally); one off the allowlist is fatal without a
// request; an allowlist that does not parse is one fatal line naming the
// key.
func TestTargetURLs(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if strings.HasPrefix(r.URL.Path, "/broken") {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tg := fleet.Target{
		FetchAllow: []string{host, "127.0.0.1:1"}, Names: []string{"alice"},
		Faces: srv.URL + "/{name}", Call: srv.URL + "/broken/call",
		Docs: []string{"http://127.0.0.1:1/docs", "http://127.0.0.1:2/docs"},
	}
	cs := TargetURLs(context.Background(), tg, 0)
	if len(cs) != 4 {
		t.Fatalf("want 4 lines, got %+v", cs)
	}
	if c := cs[0]; c.Name != "url target.faces" || !c.OK || !strings.Contains(c.Detail, srv.URL+"/alice answers 200") {
		t.Errorf("faces: %+v", c)
	}
	if c := cs[1]; c.Name != "url target.call" || !c.OK || !strings.Contains(c.Detail, "answers 500") {
		t.Errorf("call answering 500: %+v", c)
	}
	if c := cs[2]; c.Name != "url target.docs[0]" || c.OK || c.Fatal || !strings.Contains(c.Detail, "127.0.0.1:1/docs") {
		t.Errorf("docs nothing answers at: %+v", c)
	}
	if c := cs[3]; c.Name != "url target.docs[1]" || c.OK || !c.Fatal || !strings.Contains(c.Fix, "target.fetch_allow") {
		t.Errorf("docs off the allowlist: %+v", c)
	}
	if hits != 2 {
		t.Errorf("%d requests; want 2 (none off the allowlist)", hits)
	}
	tg.FetchAllow = []string{"no port here"}
	if cs := TargetURLs(context.Background(), tg, 0); len(cs) != 1 || cs[0].Name != "fetch_allow" || !cs[0].Fatal {
		t.Errorf("a bad allowlist: %+v", cs)
	}
}
