package specialists

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fixtures/spa"
	"github.com/qafleet/fleetd/fleet"
)

var canaryToken = regexp.MustCompile(`qa[0-9a-f]{10}`)

// TestExerciseLeavesThePlatformAsFound: security at exercise, with the
// rendering crawl, against Lantern (flawed): it writes canaries into the
// makers' status lines (PUT) and notes (POST), and submits the note form
// in the browser. Afterwards the platform stores what it stored before,
// except what the run lists as left on the platform (in its summary and
// the run record's footer): every status line is back, every note a
// qa_submit POST created is deleted again, and each note left holds a
// canary the list names.
func TestExerciseLeavesThePlatformAsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs security with a browser")
	}
	exec := mustChromium(t)
	app, err := spa.Serve(context.Background(), spa.Flawed)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	// A note someone left before the run: it must still be there after.
	resp, err := http.PostForm(app.URL()+"/api/v1/profiles/ada/notes", map[string][]string{"note": {"Lovely brass."}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	before := app.State()
	tg := app.Target()
	client := &http.Client{Timeout: 10 * time.Second}
	var count writeCount
	b, err := evalBrowser(exec, tg, fleet.Exercise)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := filepath.Join(t.TempDir(), "runs")
	res, got := runLoopIn(t, dir, "security", fleet.Exercise, tg, httpToolsCounted(tg, client, client, evalWrites, &count), Options{Renderer: b})
	after := app.State()
	t.Logf("qa_submit: %v", count.urls)
	if !slices.ContainsFunc(got, func(f map[string]any) bool { return strings.Contains(fmt.Sprint(f["summary"]), "Stored DOM-based XSS") }) {
		t.Fatalf("the run found no stored XSS: it wrote nothing worth undoing:%s", summaries(got))
	}
	var deletes int
	for _, u := range count.urls {
		if strings.HasPrefix(u, "DELETE ") {
			deletes++
		}
	}
	if deletes == 0 {
		t.Errorf("no DELETE sent for the notes the run's POSTs created: %v", count.urls)
	}
	_, left, _ := strings.Cut(res.Summary, "Left on the platform: ")
	left, _, _ = strings.Cut(left, ". Observed: ")
	if diff := cmp.Diff(before.Status, after.Status); diff != "" {
		t.Errorf("status lines not restored (-before +after):\n%s", diff)
	}
	for _, m := range spa.Makers {
		was, is := before.Notes[m.Name], after.Notes[m.Name]
		if len(is) < len(was) || !slices.Equal(is[:len(was)], was) {
			t.Errorf("%s: notes left before the run changed: %q, now %q", m.Name, was, is)
			continue
		}
		for _, n := range is[len(was):] {
			tok := canaryToken.FindString(n)
			if tok == "" || !strings.Contains(left, tok) {
				t.Errorf("%s: a note the run left and did not list: %q (left: %q)", m.Name, n, left)
			}
		}
	}
	// The list is in the run record, for the operator.
	var record []byte
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			record = append(record, b...)
		}
		return nil
	})
	if left != "" && !strings.Contains(string(record), "Left on the platform: ") {
		t.Errorf("the run record does not list what was left: %s", left)
	}
	t.Logf("left on the platform: %s", left)
}
