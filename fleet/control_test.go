package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestControlDial(t *testing.T) {
	dir := t.TempDir()
	c := NewControl(dir)
	if d, err := c.Dial(); d != Observe || err != nil {
		t.Fatalf("absent dial = %s, %v; want observe", d, err)
	}
	if _, err := c.SetDial(Exercise, "  ", "ops"); err == nil {
		t.Error("SetDial without a reason accepted")
	}
	from, err := c.SetDial(Exercise, "probing the new release", "ops")
	if err != nil || from != Observe {
		t.Fatalf("SetDial = %s, %v", from, err)
	}
	if d, _ := c.Dial(); d != Exercise {
		t.Errorf("dial = %s after set", d)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "autonomy"))
	if string(b) != "exercise\n" {
		t.Errorf("autonomy file = %q, want one word", b)
	}
	c.SetDial(Observe, "incident", "ops")
	recs, err := c.Audit()
	if err != nil || len(recs) != 2 {
		t.Fatalf("audit = %+v, %v", recs, err)
	}
	if r := recs[0]; r.Action != "dial" || r.From != "observe" || r.To != "exercise" || r.User != "ops" || r.Reason != "probing the new release" || r.Time.IsZero() {
		t.Errorf("audit record = %+v", r)
	}
	// Fail closed: a garbled file reads as observe, with an error.
	os.WriteFile(filepath.Join(dir, "autonomy"), []byte("propose please"), 0o600)
	if d, err := c.Dial(); d != Observe || err == nil {
		t.Errorf("garbled dial = %s, %v; want observe and an error", d, err)
	}
	os.Remove(filepath.Join(dir, "autonomy"))
	os.Mkdir(filepath.Join(dir, "autonomy"), 0o700) // unreadable as a file
	if d, err := c.Dial(); d != Observe || err == nil {
		t.Errorf("unreadable dial = %s, %v", d, err)
	}
}

func TestControlPause(t *testing.T) {
	dir := t.TempDir()
	c := NewControl(dir)
	if p, _ := c.Paused(); p {
		t.Fatal("paused by default")
	}
	if err := c.Pause("incident 42", "ops"); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Paused(); !p {
		t.Error("not paused after Pause")
	}
	if err := c.Resume("fixed", "ops"); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Paused(); p {
		t.Error("paused after Resume")
	}
	if err := c.Resume("again", "ops"); err != nil {
		t.Errorf("second resume: %v", err)
	}
	recs, _ := c.Audit()
	var actions []string
	for _, r := range recs {
		actions = append(actions, r.Action)
	}
	if strings.Join(actions, ",") != "pause,resume,resume" {
		t.Errorf("audit actions %v", actions)
	}
	// A torn last audit line is skipped, not fatal.
	f, _ := os.OpenFile(filepath.Join(dir, "audit.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"time":"2026-`)
	f.Close()
	if recs, err := c.Audit(); err != nil || len(recs) != 3 {
		t.Errorf("audit with torn tail = %d records, %v", len(recs), err)
	}
}

func TestControlRecord(t *testing.T) {
	c := NewControl(t.TempDir())
	if err := c.Record("", "x", "u"); err == nil {
		t.Error("an empty action was recorded")
	}
	if err := c.Record("run", "smoke now", "alice via console from 127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	recs, err := c.Audit()
	if err != nil || len(recs) != 1 || recs[0].Action != "run" || recs[0].User != "alice via console from 127.0.0.1" || recs[0].Reason != "smoke now" {
		t.Errorf("audit %+v %v", recs, err)
	}
}
