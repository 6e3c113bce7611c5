package trajectory

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/qafleet/fleetd/faultnet"
)

// TestFullDisk: a run record on a tmpfs that fills up mid-run. The turn that
// does not fit fails with ENOSPC and leaves no torn line (the file keeps
// every whole turn written before); the footer cannot be written either, and
// the file is closed without it; once space is freed, Recover completes it
// with a harness_error footer whose totals count the turns that were kept.
// A writer that keeps going after space is back writes whole turns again.
func TestFullDisk(t *testing.T) {
	disk := faultnet.Tmpfs(t, 64<<10)
	w, err := Create(disk, "r-full", sampleHeader())
	if err != nil {
		t.Fatal(err)
	}
	filler := faultnet.Fill(t, disk)
	kept := 0
	var werr error
	for i := 0; i < 1000; i++ {
		if werr = w.WriteTurn(sampleTurn(i)); werr != nil {
			break
		}
		kept++
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("a turn on a full disk: %v, want ENOSPC", werr)
	}
	t.Logf("%d turns fit in the last page before the disk was full", kept)
	run, err := ReadAll(w.Path())
	if err != nil || run.Torn || len(run.Turns()) != kept || run.Footer != nil {
		t.Fatalf("the record after a failed write: %v, torn %v, %d turns (want %d)", err, run.Torn, len(run.Turns()), kept)
	}

	// Space back: the writer goes on where it stopped.
	os.Remove(filler)
	if err := w.WriteTurn(sampleTurn(kept)); err != nil {
		t.Fatalf("a turn after space came back: %v", err)
	}
	kept++
	// The disk fills again before the footer: Close fails, the file is
	// closed without a footer, whole. (The footer is longer than the slack
	// of the file's last page, which a full tmpfs still lets it use.)
	filler = faultnet.Fill(t, disk)
	if err := w.Close(Footer{Outcome: OutcomeDone, FinalSummary: strings.Repeat("a long summary ", 1000)}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close on a full disk: %v, want ENOSPC", err)
	}
	run, err = ReadAll(w.Path())
	if err != nil || run.Torn || run.Footer != nil || len(run.Turns()) != kept {
		t.Fatalf("the record after a failed footer: %v, torn %v, footer %v, %d turns (want %d)", err, run.Torn, run.Footer, len(run.Turns()), kept)
	}

	// Recovery on the full disk: its footer fails to fit and is taken
	// back, leaving the record as it was; with space back it completes the
	// record. A turn sized to leave 8 bytes of the last page's slack makes
	// sure the footer cannot fit there (a full tmpfs lets a file grow
	// within its last page).
	os.Remove(filler)
	padLastPage(t, w.Path(), kept)
	kept++
	filler = faultnet.Fill(t, disk)
	if ok, err := Recover(w.Path(), "the disk was full"); ok || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("recover on the full disk: %v, %v; want ENOSPC", ok, err)
	}
	if run, err := ReadAll(w.Path()); err != nil || run.Torn || run.Footer != nil || len(run.Turns()) != kept {
		t.Fatalf("the record after recovery failed on the full disk: %v, torn %v, footer %v", err, run.Torn, run.Footer)
	}
	os.Remove(filler)
	if ok, err := Recover(w.Path(), "the disk was full"); !ok || err != nil {
		t.Fatalf("recover after space came back: %v, %v", ok, err)
	}
	run, err = ReadAll(w.Path())
	if err != nil || run.Footer == nil || run.Footer.Outcome != OutcomeHarnessError || run.Footer.Totals.Turns != kept {
		t.Fatalf("the recovered record: %v, footer %+v, want harness_error over %d turns", err, run.Footer, kept)
	}
}

// padLastPage appends turn index to the record at path, sized so that 8
// bytes of the file's last 4 KiB page are left.
func padLastPage(t *testing.T, path string, index int) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := 4096 - st.Size()%4096 - 8
	if want < 512 {
		want += 4096
	}
	enc := newEncoder(defaultRedactor)
	pad := 0
	var line []byte
	for range 10 {
		tr := sampleTurn(index)
		tr.Observation = strings.Repeat("p", pad)
		if line, err = enc.encode(tr); err != nil {
			t.Fatal(err)
		}
		if int64(len(line)) == want {
			break
		}
		pad += int(want) - len(line)
	}
	if int64(len(line)) != want {
		t.Fatalf("a padding turn of %d bytes, want %d", len(line), want)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(line); err != nil {
		t.Fatal(err)
	}
}
