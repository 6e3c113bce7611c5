package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// reportCSS is the stylesheet the HTML report file inlines: the console's
// own (static/console.css), so the file looks like the Health page.
var reportCSS = func() string {
	b, err := staticFS.ReadFile("static/console.css")
	if err != nil {
		panic("console: embedded stylesheet missing: " + err.Error())
	}
	return string(b)
}()

// reportCSP allows the file nothing but its one inline stylesheet (by hash)
// and data: images: no script, no request to anywhere.
var reportCSP = "default-src 'none'; style-src 'sha256-" + func() string {
	sum := sha256.Sum256([]byte(reportCSS))
	return base64.StdEncoding.EncodeToString(sum[:])
}() + "'; img-src data:; base-uri 'none'; form-action 'none'"

// maxReportDetails bounds the per-cluster detail sections of the file.
const maxReportDetails = 100

// RenderReport writes the Health page's content as one self-contained HTML
// file: inline CSS and SVG, no script, no external request (its CSP says
// so to the browser too). top > 0 keeps the first top clusters; details
// are written for the first 100. Text from the log is escaped by
// html/template; only the embedded stylesheet is inserted unescaped.
func RenderReport(w io.Writer, rep *fleet.Report, hist *History, top int, now time.Time) error {
	if hist == nil {
		hist = &History{}
	}
	t, err := reportTemplate()
	if err != nil {
		return err
	}
	v := &healthView{Now: now, Static: true}
	r := *rep
	if top > 0 && top < len(r.Clusters) {
		r.Clusters = r.Clusters[:top]
	}
	fillHealth(v, &r, hist, 0)
	data := struct {
		View    *healthView
		CSS     template.CSS // our embedded stylesheet, never log text
		CSP     string
		Written time.Time
	}{v, template.CSS(reportCSS), reportCSP, now}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "report", data); err != nil {
		return fmt.Errorf("render html report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("render html report: %w", err)
	}
	return nil
}

// reportTemplate parses the report's templates once.
var reportTemplate = sync.OnceValues(func() (*template.Template, error) {
	f := funcs()
	f["details"] = func(rows []healthRow) []healthRow { return rows[:min(len(rows), maxReportDetails)] }
	t, err := template.New("report").Funcs(f).ParseFS(templateFS, "templates/partials.html", "templates/report.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	return t, nil
})
