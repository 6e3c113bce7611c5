package crawl

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Item is one URL in the crawl: where it was found and how deep.
type Item struct {
	URL   string
	From  string // the page that linked it; "" for a seed
	Kind  string // the link kind, or what the seed is
	Depth int
	// Seed marks a starting point: it counts toward its template but is
	// never refused for a full one.
	Seed bool
	// Later queues the item behind every item without it (stylesheets,
	// images: worth a look for dead links, seldom a source of new ones).
	Later bool
}

// Frontier is a breadth-first crawl queue. It admits each normalized URL
// once, only inside its scope, and at most PerTemplate URLs of one
// template (see Template). The zero value is not usable: use NewFrontier.
type Frontier struct {
	scope       func(string) bool
	perTemplate int
	seen        map[string]bool
	templates   map[string]int
	queue       []Item
	next        int
	later       []Item // Later items, after queue
	nextLater   int
	dropped     int // admitted by scope but over their template's cap
	outside     int // refused by scope
}

// NewFrontier returns a frontier admitting URLs for which scope returns
// true, at most perTemplate of a template (0 means 3).
func NewFrontier(scope func(string) bool, perTemplate int) *Frontier {
	if perTemplate <= 0 {
		perTemplate = 3
	}
	return &Frontier{scope: scope, perTemplate: perTemplate, seen: map[string]bool{}, templates: map[string]int{}}
}

// Add queues it unless its URL was seen, is out of scope or its template
// is full. It reports whether the item was queued. The URL is normalized
// first; an unusable URL is refused.
func (f *Frontier) Add(it Item) bool {
	if f.seen[it.URL] {
		return false // the common case: a link offered again, already normal
	}
	u, err := url.Parse(it.URL)
	if err != nil {
		return false
	}
	n := Normalize(u)
	if n == "" || f.seen[n] {
		f.seen[it.URL] = true
		return false
	}
	f.seen[n], f.seen[it.URL] = true, true
	if !f.scope(n) {
		f.outside++
		return false
	}
	t := Template(n)
	if f.templates[t] >= f.perTemplate && !it.Seed {
		f.dropped++
		return false
	}
	f.templates[t]++
	it.URL = n
	if it.Later {
		f.later = append(f.later, it)
	} else {
		f.queue = append(f.queue, it)
	}
	return true
}

// Next returns the next queued item, breadth first (items are queued in
// the order found, and a page's links are found after the page), items
// marked Later only when no other is left.
func (f *Frontier) Next() (Item, bool) {
	if f.next < len(f.queue) {
		it := f.queue[f.next]
		f.next++
		return it, true
	}
	if f.nextLater < len(f.later) {
		it := f.later[f.nextLater]
		f.nextLater++
		return it, true
	}
	return Item{}, false
}

// Pending is how many queued items Next has not returned yet.
func (f *Frontier) Pending() int { return len(f.queue) - f.next + len(f.later) - f.nextLater }

// Seen reports whether a URL (normalized) was offered before.
func (f *Frontier) Seen(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && f.seen[Normalize(u)]
}

// Stats returns how many URLs were refused as out of scope and how many
// were dropped because their template was full.
func (f *Frontier) Stats() (outside, dropped int) { return f.outside, f.dropped }

var (
	numericSeg = regexp.MustCompile(`^[0-9]+$|^[0-9a-fA-F]{8,}$|^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$|^0x[0-9a-fA-F]+$`)
	digitRun   = regexp.MustCompile(`[0-9]+`)
)

// Template is the shape of a URL: origin and path with numeric, hex and
// uuid segments blanked and digit runs inside a segment blanked, plus the
// sorted query keys without their values. /items/41 and /items/42?page=2
// share a template with /items/7?page=9; /docs/intro and /docs/api do not.
func Template(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	segs := strings.Split(u.EscapedPath(), "/")
	for i, s := range segs {
		switch {
		case numericSeg.MatchString(s):
			segs[i] = "{n}"
		default:
			segs[i] = digitRun.ReplaceAllString(s, "0")
		}
	}
	keys := make([]string, 0)
	for k := range u.Query() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t := u.Scheme + "://" + u.Host + strings.Join(segs, "/")
	if len(keys) > 0 {
		t += "?" + strings.Join(keys, "&")
	}
	return t
}
