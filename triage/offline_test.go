package triage

import (
	"errors"
	"strings"
	"testing"
)

// TestOpenStored: no store is an error naming the data dir, and the config
// is not asked for; a store that holds nothing reads as not ok.
func TestOpenStored(t *testing.T) {
	dir := t.TempDir()
	asked := false
	_, err := OpenStored(dir, func() (Config, error) { asked = true; return Config{}, nil })
	if err == nil || !strings.Contains(err.Error(), "no triage store in "+dir) || asked {
		t.Fatalf("no store: %v (config asked %v)", err, asked)
	}
	tr, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if _, err := OpenStored(dir, func() (Config, error) { return Config{}, errors.New("bad key") }); err == nil || !strings.Contains(err.Error(), "triage config: bad key") {
		t.Errorf("bad config: %v", err)
	}
	tr, err = OpenStored(dir, func() (Config, error) { return Config{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	n, _, ok, err := tr.ReadStored(func([]Entry) error { return nil })
	if err != nil || ok || n != 0 {
		t.Errorf("empty store: n %d ok %v err %v", n, ok, err)
	}
}
