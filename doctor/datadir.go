package doctor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/fleet"
)

// MinFreeBytes is the free space below which the data dir check fails
// (run records, outbox and the triage store all live there).
const MinFreeBytes = 256 << 20

// DataDir: the data dir is writable with room to spare; then the dial,
// the kill switch (ctl, the data dir's) and the outbox, as they stand.
func DataDir(dir string, ctl *fleet.Control) []Check {
	w := Check{Name: "data dir", Fatal: true}
	if err := Writable(dir); err != nil {
		w.Detail = err.Error()
		w.Fix = "create it and make it writable by this user, or pass --data-dir"
		return []Check{w}
	}
	free, ferr := freeBytes(dir)
	switch {
	case ferr != nil:
		w.OK = true
		w.Detail = fmt.Sprintf("%s is writable (free space unknown: %v)", dir, ferr)
	case free < MinFreeBytes:
		w.Detail = fmt.Sprintf("%s has only %s free", dir, bytesIEC(free))
		w.Fix = "free some space (run records, the outbox and the triage store live here)"
	default:
		w.OK = true
		w.Detail = fmt.Sprintf("%s is writable, %s free", dir, bytesIEC(free))
	}
	out := []Check{w}
	dial, err := ctl.Dial()
	d := Check{Name: "dial", OK: err == nil, Detail: dial.String()}
	if err != nil {
		d.Detail, d.Fix = err.Error(), "fleetd dial set RUNG --reason \"...\" rewrites it"
	} else if dial == fleet.Observe {
		d.Detail += " (read-only probes; fleetd dial set exercise --reason \"...\" lets them mint, publish and call)"
	}
	out = append(out, d)
	paused, err := ctl.Paused()
	p := Check{Name: "kill switch", OK: err == nil && !paused, Detail: "not paused"}
	switch {
	case err != nil:
		p.Detail = err.Error()
	case paused:
		p.Detail, p.Fix = "paused: no run starts", "fleetd resume --config F"
	}
	out = append(out, p)
	items, _ := filepath.Glob(filepath.Join(dir, "outbox", "*.json"))
	o := Check{Name: "outbox", OK: true, Detail: "empty"}
	if len(items) > 0 {
		o.Detail = fmt.Sprintf("%d findings wait to be posted (they go at the next start or probe, once the log can be written)", len(items))
	}
	return append(out, o)
}

// Writable creates, syncs and removes a file in dir (creating dir).
func Writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_, werr := f.WriteString("ok")
	serr := f.Sync()
	cerr := f.Close()
	os.Remove(name)
	return errors.Join(werr, serr, cerr)
}

func bytesIEC(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
