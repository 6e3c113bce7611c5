// Package toy is the generator's test library: one real bug (Parse on an
// unclosed list), a misuse trap (Machine has no constructor), a promised
// panic (MustCompile) and the argument shapes the generator handles.
package toy

import (
	"errors"
	"io"
	"io/ioutil"
	"strings"
)

// Doc is a parsed list.
type Doc struct{ Items []string }

// Parse reads a bracketed list, "[a,b]".
func Parse(s string) (*Doc, error) {
	if !strings.HasPrefix(s, "[") {
		return nil, errors.New("toy: want [")
	}
	end := strings.IndexByte(s, ']')
	body := s[1:end] // the bug: no ']' panics
	return &Doc{Items: strings.Split(body, ",")}, nil
}

// Decoder reads documents from a reader.
type Decoder struct {
	r      io.Reader
	strict bool
}

// NewDecoder returns a decoder of r.
func NewDecoder(r io.Reader, strict bool) *Decoder { return &Decoder{r: r, strict: strict} }

// Decode reads one document.
func (d *Decoder) Decode() (int, error) {
	b, err := ioutil.ReadAll(d.r)
	if err != nil {
		return 0, err
	}
	if d.strict && len(b) == 0 {
		return 0, errors.New("toy: empty")
	}
	return len(b), nil
}

// Machine counts what it is fed; only the package's own code makes a
// working one (there is no exported constructor).
type Machine struct {
	next  *Machine
	count int
}

// Feed counts s.
func (m *Machine) Feed(s string) int {
	m.next.count += len(s)
	return m.next.count
}

// MustCompile returns s; it panics if s is empty.
func MustCompile(s string) string {
	if s == "" {
		panic("toy: empty pattern")
	}
	return s
}

// Options shape Render's output.
type Options struct {
	Width  int
	Name   string
	hidden bool
}

// Render joins words under a name.
func Render(o Options, words ...string) string {
	if o.hidden {
		return ""
	}
	return o.Name + ":" + strings.Join(words, " ")
}

type opts struct{ A int }

// Hidden takes an unexported struct: no harness outside the package can
// build one.
func Hidden(o opts, s string) int { return o.A + len(s) }

// Sum adds numbers.
func Sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// ParseFile parses the file at path: its input is a path, not a document.
func ParseFile(path string) (*Doc, error) {
	b, err := ioutil.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(string(b))
}

// Site is a site read from a config file.
type Site struct{ title string }

// LoadSite reads the site's config: its name says nothing of a file, its
// parameter does (go-org's blorg.ReadConfig(configFile string)).
func LoadSite(configFile string) (*Site, error) {
	b, err := ioutil.ReadFile(configFile)
	if err != nil {
		return nil, err
	}
	return &Site{title: string(b)}, nil
}

// Title parses a title into the site.
func (s *Site) Title(t string) string { return s.title + t }

// Serve would listen on the network: never an entry.
func (s *Site) Serve(b []byte) error { return nil }

// Check would run cmd on input (toml-test's CommandParser): never an entry.
func Check(cmd []string, input string) error { return nil }

// Page is a page of a site; only LoadSite's caller sets its site.
type Page struct {
	Title string
	site  *Site
}

// Heading renders p's heading: a harness's Page literal has no site.
func Heading(p *Page) string { return p.site.title + p.Title }
