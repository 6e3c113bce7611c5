package specialists

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fixtures/spa"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
)

// TestExerciseLeavesThePlatformAsFound: security at exercise, with the
// rendering crawl, against Lantern (flawed): it writes canaries into the
// makers' status lines (PUT) and notes (POST), and submits the note form
// in the browser, whose writes the run's gate lets through. Afterwards the
// platform stores what it stored before, except what the run lists as left
// on the platform (in its summary and the run record's footer): every
// status line is back, and every note is deleted again, the ones
// qa_submit POSTs created and the ones the browser's form submissions
// created (Lantern names each new note in a Location header: the browser
// reports it, Rendered.Created, and the run's qa_submit may DELETE it).
func TestExerciseLeavesThePlatformAsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs security with a browser")
	}
	exec := mustChromium(t)
	app, err := spa.Serve(context.Background(), twin.Flawed)
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
	b, err := evalBrowser(exec, tg, fleet.Exercise, count.pageCreated)
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
	if strings.Contains(left, "/notes on ") {
		t.Errorf("a note form's browser submission listed as left, not deleted: %s", left)
	}
	if diff := cmp.Diff(before.Status, after.Status); diff != "" {
		t.Errorf("status lines not restored (-before +after):\n%s", diff)
	}
	for _, m := range spa.Makers {
		was, is := before.Notes[m.Name], after.Notes[m.Name]
		if len(is) < len(was) || !slices.Equal(is[:len(was)], was) {
			t.Errorf("%s: notes left before the run changed: %q, now %q", m.Name, was, is)
			continue
		}
		// Every note the run stored was named (Location): none is left,
		// not even one the browser's form stored.
		for _, n := range is[len(was):] {
			t.Errorf("%s: a note the run stored and did not delete: %q (left: %q)", m.Name, n, left)
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
