package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Control is the operator's switches, kept as files in the data dir so every
// process (the daemon, `fleetd tool call`, `fleetd probe`) sees the same state:
//
//	<data_dir>/autonomy     one word: observe, exercise or propose (absent: observe)
//	<data_dir>/paused       present: the kill switch is on
//	<data_dir>/audit.jsonl  one JSON record per change
//
// Readers read the files on every call, so a change takes effect at the next
// tool boundary of every running run. Reading fails closed: an unreadable or
// malformed autonomy file reads as Observe (with the error), and an
// unreadable paused marker reads as paused.
type Control struct {
	dir string
	now func() time.Time
}

// NewControl returns the switches of dataDir.
func NewControl(dataDir string) *Control { return &Control{dir: dataDir, now: time.Now} }

// AuditRecord is one line of audit.jsonl.
type AuditRecord struct {
	Time   time.Time `json:"time"`
	User   string    `json:"user"`
	Action string    `json:"action"` // "dial", "pause", "resume"
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Reason string    `json:"reason"`
}

// Dial returns the current rung. A missing file is Observe, the default.
// On any other problem it returns Observe and the error: never a higher rung
// than the operator set.
func (c *Control) Dial() (Dial, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "autonomy"))
	if errors.Is(err, fs.ErrNotExist) {
		return Observe, nil
	}
	if err != nil {
		return Observe, fmt.Errorf("read dial: %w", err)
	}
	d, err := ParseDial(string(b))
	if err != nil {
		return Observe, fmt.Errorf("read dial %s: %w", filepath.Join(c.dir, "autonomy"), err)
	}
	return d, nil
}

// SetDial moves the dial to rung, atomically, and appends an audit record
// naming user and reason. A reason is required: turning the dial is a
// deliberate act. It returns the previous rung.
func (c *Control) SetDial(to Dial, reason, user string) (Dial, error) {
	if !to.Valid() {
		return Observe, fmt.Errorf("set dial: invalid rung %d", to)
	}
	if strings.TrimSpace(reason) == "" {
		return Observe, errors.New("set dial: a reason is required")
	}
	from, _ := c.Dial()
	if err := WriteFileAtomic(filepath.Join(c.dir, "autonomy"), []byte(to.String()+"\n"), 0o600); err != nil {
		return from, fmt.Errorf("set dial: %w", err)
	}
	return from, c.audit(AuditRecord{User: user, Action: "dial", From: from.String(), To: to.String(), Reason: reason})
}

// Paused reports whether the kill switch is on. An error reading the marker
// (other than its absence) reports paused.
func (c *Control) Paused() (bool, error) {
	_, err := os.Stat(filepath.Join(c.dir, "paused"))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return true, fmt.Errorf("read pause marker: %w", err)
}

// Pause turns the kill switch on: no run starts, running runs stop at their
// next tool boundary (their names are still released).
func (c *Control) Pause(reason, user string) error {
	if err := WriteFileAtomic(filepath.Join(c.dir, "paused"), []byte(c.now().UTC().Format(time.RFC3339)+" "+oneLine(reason)+"\n"), 0o600); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	return c.audit(AuditRecord{User: user, Action: "pause", Reason: reason})
}

// Resume turns the kill switch off.
func (c *Control) Resume(reason, user string) error {
	if err := os.Remove(filepath.Join(c.dir, "paused")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resume: %w", err)
	}
	return c.audit(AuditRecord{User: user, Action: "resume", Reason: reason})
}

// Audit returns the audit records, oldest first. A torn last line (a crash
// mid-append) is skipped.
func (c *Control) Audit() ([]AuditRecord, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "audit.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []AuditRecord
	for _, line := range strings.Split(string(b), "\n") {
		var r AuditRecord
		if line == "" || json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

func (c *Control) audit(r AuditRecord) error {
	r.Time = c.now().UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(c.dir, "audit.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("audit: %w", werr)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
