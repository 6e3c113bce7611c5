package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// formatHTML is `fleetd report --format html`: the console's Health page as
// one self-contained file.
const formatHTML = "html"

// writeReport renders r in format (triage's formats, or html) to out, or to
// stdout when out is empty. A file is written atomically and its absolute
// path printed.
func (a findingsCommands) writeReport(r fleet.Report, format string, top int, out string) error {
	var buf bytes.Buffer
	var w io.Writer = a.stdout
	if out != "" {
		w = &buf
	}
	if err := a.renderReport(w, r, format, top); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	path, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("report --out: %w", err)
	}
	if err := fleet.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report --out: %w", err)
	}
	_, err = fmt.Fprintf(a.stdout, "wrote %s\n", path)
	return err
}

func (a findingsCommands) renderReport(w io.Writer, r fleet.Report, format string, top int) error {
	switch format {
	case formatSARIF:
		return a.renderSARIF(w, r) // every cluster: code scanning closes alerts missing from an upload
	case formatHTML:
	default:
		return triage.Render(w, r, format, top, time.Now())
	}
	// Through JSON, as the console reads latest.json: the file shows what
	// the Health page would (invalid UTF-8 from the log replaced, a report
	// the console cannot show refused).
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	cr, err := console.DecodeReport(b)
	if err != nil {
		return err
	}
	// A history that cannot be read only costs the trend picture.
	hist, _ := console.NewReports(a.reportsDir()).History()
	return console.RenderReport(w, cr, hist, top, time.Now())
}

// writeHTMLReport writes the report as <data_dir>/reports/latest.html and
// returns its path (the demo's parting file).
func (a findingsCommands) writeHTMLReport(r fleet.Report) (string, error) {
	path := filepath.Join(a.reportsDir(), "latest.html")
	var buf bytes.Buffer
	if err := a.renderReport(&buf, r, formatHTML, 0); err != nil {
		return "", err
	}
	return path, fleet.WriteFileAtomic(path, buf.Bytes(), 0o644)
}
