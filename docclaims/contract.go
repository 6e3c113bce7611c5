package docclaims

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/crawl"
)

// Claim is one promise a docs page makes about an endpoint: the method and
// URL, and what the answer will be (content type, a success status,
// top-level fields), each with the doc line that says so.
type Claim struct {
	Method string // GET, POST, ...
	URL    string // absolute, resolved against the doc; may hold placeholders
	Line   int    // 1-based line of the endpoint mention (in the rendered text for HTML docs)
	Quote  string // that line, trimmed
	// Type is the promised response type: json, html, text, xml or
	// markdown; "" when the docs promise none.
	Type     string
	TypeLine int
	// Status is a promised success status (2xx); 0 when none.
	Status     int
	StatusLine int
	// Fields are promised top-level fields of a JSON answer.
	Fields     []string
	FieldsLine int
	// The doc lines that make the type, status and fields promises.
	TypeQuote, StatusQuote, FieldsQuote string
}

const (
	claimBlockLines = 25 // lines after a mention read for its promises
	claimMax        = 64 // claims per page
)

var (
	methodWord = `GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS`
	// pathToken is a root-relative path or an http(s) URL.
	pathToken = "\x60?((?:https?://[^\\s\x60\"'<>)\\]|]+)|/(?:[A-Za-z0-9_{:<.~\\-\\[][^\\s\x60\"'<>)\\],;|]*)?)"
	// mention is a method followed, within the sentence, by a path.
	mention = regexp.MustCompile(`\b(` + methodWord + `)\b(?:[^.\n\x60/]|\x60[^\x60\n/]*\x60|\.\w){0,60}?` + pathToken)
	// impliedGet is "`/path` returns ...": a GET the docs describe.
	impliedGet = regexp.MustCompile(`(?i)(?:^|[\s(])\x60((?:https?://|/)[^\s\x60]*)\x60\s+(?:endpoint\s+|route\s+)?(?:returns|responds|answers|serves|gives|lists|shows)\b`)
	methodCell = regexp.MustCompile(`^(` + methodWord + `)$`)
	pathCell   = regexp.MustCompile("^\x60?((?:https?://[^\\s\x60]+)|/[^\\s\x60]*)\x60?$")
	heading    = regexp.MustCompile(`^\s{0,3}#{1,6}\s`)
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	// responseCue marks text about the answer rather than the request.
	responseCue = regexp.MustCompile(`(?i)\b(?:returns?|returning|responds?|responding|response|responses|replies|reply|answers?|serves?|yields?|produces?|outputs?|gives)\b|=>|->|→`)
	// requestCue marks text about the request.
	requestCue  = regexp.MustCompile(`(?i)\b(?:send|sends|sending|request body|payload|body:|post (?:a|the) body|-d|--data[\w-]*|--json|-F|--form)\b`)
	typeWord    = regexp.MustCompile(`(?i)\b(application/(?:[\w.+-]+\+)?json|application/xml|text/xml|text/html|text/plain|text/markdown|json|html|xml|plain[ -]text|markdown)\b`)
	typePhrase  = regexp.MustCompile(`(?i)\b(json|html|xml)\s+(?:response|object|document|array|reply|page|list)\b`)
	ctHeader    = regexp.MustCompile(`(?i)content-type:\s*([\w.+-]+/[\w.+-]+)`)
	statusCode  = regexp.MustCompile(`(?i)(?:\b(?:returns?|responds?(?: with)?|answers?(?: with)?|status(?: code)?|HTTP(?:/[\d.]+)?)\s*:?\s*\x60?(2\d\d)\b|\b(2\d\d)\s+(?:OK|Created|Accepted|No Content)\b)`)
	fieldList   = regexp.MustCompile("(?i)\\b(?:fields?|keys?|properties|attributes|contains?|containing|includes?|including|with)\\b:?\\s+(?:(?:an?|the)\\s+)?((?:\x60[A-Za-z_][\\w.-]*\x60(?:\\s*,\\s*(?:and\\s+|or\\s+)?|\\s+and\\s+|\\s+or\\s+)?)+)")
	backticked  = regexp.MustCompile("\x60([A-Za-z_][\\w.-]*)\x60")
	successCode = regexp.MustCompile(`\b(2\d\d)\b`)
	identifier  = regexp.MustCompile(`^[A-Za-z_][\w.-]*$`)
	// responseLabel is a line that introduces the answer: "Response:",
	// "#### Example response", "**Returns**".
	responseLabel = regexp.MustCompile(`(?i)^[\s#*_>-]*(?:example\s+|sample\s+)?(?:response|responses|returns|output|reply|result)(?:\s+(?:example|body|fields|format))?[\s*_:]*$`)
	requestLabel  = regexp.MustCompile(`(?i)^[\s#*_>-]*(?:example\s+|sample\s+)?(?:request|body|parameters|params|arguments|input)(?:\s+(?:example|body|fields|format))?[\s*_:]*$`)
)

// docLine is one line of a docs page, with what the parser knows of it.
type docLine struct {
	text   string
	code   bool     // inside a fenced or indented code block
	cells  []string // table cells, nil when not a table row
	header []string // the table's header cells, lowercased
}

func splitDocLines(text string) []docLine {
	var out []docLine
	inFence := false
	var header []string
	for raw := range strings.Lines(text) {
		t := strings.TrimRight(raw, "\r\n")
		if fence.MatchString(t) {
			inFence = !inFence
			out = append(out, docLine{text: t, code: true})
			continue
		}
		l := docLine{text: t, code: inFence || strings.HasPrefix(t, "    ") || strings.HasPrefix(t, "\t")}
		trim := strings.TrimSpace(t)
		if !l.code && strings.HasPrefix(trim, "|") && strings.Count(trim, "|") >= 2 {
			cells := splitCells(trim)
			switch {
			case isSeparatorRow(cells):
				// the row between header and body
			case header == nil:
				header = lowerAll(cells)
				l.header = header
			default:
				l.cells, l.header = cells, header
			}
		} else {
			header = nil
		}
		out = append(out, l)
	}
	return out
}

func splitCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	cells := strings.Split(row, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

func isSeparatorRow(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, ":- ") != "" {
			return false
		}
	}
	return len(cells) > 0
}

func lowerAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.ToLower(strings.Trim(x, "*_` "))
	}
	return out
}

// endpointAt is one mention: where on which line, and the column span
// after it that belongs to it (up to the next mention on the line).
type endpointAt struct {
	method, ref string
	pathAt      int // where the path starts on the line
	line        int // index into lines
	start, end  int // the span of the line read for promises on that line
	row         bool
}

// Claims reads what a docs page promises about endpoints, in any of the
// usual styles: "METHOD /path" in code blocks, code spans, bullets and
// prose ("send a GET request to /x"), "`/path` returns ...", table rows
// with a method and a path cell, and curl examples (-X, -d/--data/-F imply
// POST, -I HEAD). What follows a mention, up to the next mention or
// section, is read for the answer it promises: "returns JSON", "responds
// with HTML", "Content-Type: application/json", "200 OK", "containing
// `a` and `b`", a JSON response example (after a response cue, or a curl
// command's output), a response-fields table. Request bodies (curl -d,
// "send {...}") are not promises about the answer. HTML docs are read as
// their rendered text (crawl.Text). Each method and URL is claimed once,
// its promises merged.
func Claims(docURL, contentType, text string) []Claim {
	base, err := url.Parse(docURL)
	if err != nil || base.Host == "" {
		return nil
	}
	if crawl.Sniff(docURL, contentType, text) == crawl.KindHTML {
		text = crawl.Text(text)
	}
	lines := splitDocLines(text)
	var ms []endpointAt
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l.cells != nil {
			if m, ok := rowMention(l); ok {
				m.line, m.row = i, true
				ms = append(ms, m)
				continue
			}
		}
		if method, ref, n, ok := curlMention(lines, i); ok {
			ms = append(ms, endpointAt{method: method, ref: ref, line: i, start: 0, end: len(l.text)})
			i += n // continuation lines
			continue
		}
		var onLine []endpointAt
		if !hasMethodWord(l.text) && !strings.Contains(l.text, "`") {
			continue // most lines mention no endpoint: skip the regexps
		}
		for _, m := range mention.FindAllStringSubmatchIndex(l.text, -1) {
			onLine = append(onLine, endpointAt{method: l.text[m[2]:m[3]], ref: l.text[m[4]:m[5]], pathAt: m[4], line: i, start: m[0]})
		}
		for _, m := range impliedGet.FindAllStringSubmatchIndex(l.text, -1) {
			// "GET `/x` returns ..." is one mention, not two.
			if !slices.ContainsFunc(onLine, func(e endpointAt) bool { return e.pathAt == m[2] }) {
				onLine = append(onLine, endpointAt{method: "GET", ref: l.text[m[2]:m[3]], pathAt: m[2], line: i, start: m[0]})
			}
		}
		slices.SortStableFunc(onLine, func(a, b endpointAt) int { return a.start - b.start })
		for j := range onLine {
			onLine[j].end = len(l.text)
			if j+1 < len(onLine) {
				onLine[j].end = onLine[j+1].start
			}
		}
		ms = append(ms, onLine...)
	}
	var out []Claim
	for k, m := range ms {
		ref := crawl.TrimURL(m.ref)
		u := crawl.Resolve(base, ref)
		if u == "" {
			continue
		}
		c := Claim{Method: m.method, URL: u, Line: m.line + 1, Quote: strings.TrimSpace(lines[m.line].text)}
		// The mention's own span, then (unless a later mention shares the
		// line, or the mention is a table row) the lines after it.
		readPromises(&c, lines, m, k+1 < len(ms) && ms[k+1].line == m.line, nextLine(ms, k, len(lines)))
		quoteLine := func(n int) string {
			if n < 1 || n > len(lines) {
				return ""
			}
			return strings.TrimSpace(lines[n-1].text)
		}
		c.TypeQuote, c.StatusQuote, c.FieldsQuote = quoteLine(c.TypeLine), quoteLine(c.StatusLine), quoteLine(c.FieldsLine)
		if i := slices.IndexFunc(out, func(x Claim) bool { return x.Method == c.Method && x.URL == c.URL }); i >= 0 {
			mergeClaim(&out[i], c)
			continue
		}
		if len(out) == claimMax {
			break
		}
		out = append(out, c)
	}
	return out
}

// hasMethodWord reports whether t holds an uppercase HTTP method name.
func hasMethodWord(t string) bool {
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
		if strings.Contains(t, m) {
			return true
		}
	}
	return false
}

// nextLine is where the promises of mention k stop being read: the line
// of the next mention on a later line, or the end.
func nextLine(ms []endpointAt, k, n int) int {
	for j := k + 1; j < len(ms); j++ {
		if ms[j].line > ms[k].line {
			return ms[j].line
		}
	}
	return n
}

func mergeClaim(dst *Claim, c Claim) {
	if dst.Type == "" && c.Type != "" {
		dst.Type, dst.TypeLine, dst.TypeQuote = c.Type, c.TypeLine, c.TypeQuote
	}
	if dst.Status == 0 && c.Status != 0 {
		dst.Status, dst.StatusLine, dst.StatusQuote = c.Status, c.StatusLine, c.StatusQuote
	}
	if len(dst.Fields) == 0 && len(c.Fields) > 0 {
		dst.Fields, dst.FieldsLine, dst.FieldsQuote = c.Fields, c.FieldsLine, c.FieldsQuote
	}
}

// rowMention finds a method cell and a path cell (or one cell holding
// both) in a table row.
func rowMention(l docLine) (endpointAt, bool) {
	method, ref := "", ""
	for _, c := range l.cells {
		t := strings.Trim(c, "`*_ ")
		if methodCell.MatchString(t) && method == "" {
			method = t
			continue
		}
		if m := pathCell.FindStringSubmatch(c); m != nil && ref == "" {
			ref = m[1]
			continue
		}
		if m := mention.FindStringSubmatch(c); m != nil && ref == "" {
			method, ref = m[1], m[2]
		}
	}
	if method == "" || ref == "" {
		return endpointAt{}, false
	}
	return endpointAt{method: method, ref: ref}, true
}

// curlMention reads a curl command starting on line i (continued with a
// trailing backslash): its method and URL, and how many continuation lines
// it used.
func curlMention(lines []docLine, i int) (method, ref string, used int, ok bool) {
	t := strings.TrimSpace(lines[i].text)
	t = strings.TrimPrefix(t, "$ ")
	if !strings.HasPrefix(t, "curl ") {
		return "", "", 0, false
	}
	for strings.HasSuffix(t, "\\") && i+used+1 < len(lines) {
		used++
		t = strings.TrimSuffix(t, "\\") + " " + strings.TrimSpace(lines[i+used].text)
	}
	args := shellFields(t)[1:]
	data := false
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "-X" || a == "--request":
			if j+1 < len(args) {
				method = strings.ToUpper(args[j+1])
				j++
			}
		case strings.HasPrefix(a, "-X") && len(a) > 2:
			method = strings.ToUpper(a[2:])
		case a == "-I" || a == "--head":
			method = "HEAD"
		case a == "-d" || strings.HasPrefix(a, "--data") || a == "--json" || a == "-F" || a == "--form":
			data = true
			j++
		case a == "-H" || a == "--header" || a == "-u" || a == "--user" || a == "-o" || a == "--output" || a == "-A" || a == "--user-agent" || a == "-e" || a == "--referer" || a == "-b" || a == "--cookie" || a == "-m" || a == "--max-time":
			j++
		case strings.HasPrefix(a, "-"):
		case ref == "" && (strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") || strings.HasPrefix(a, "/")):
			ref = a
		}
	}
	if method == "" {
		method = "GET"
		if data {
			method = "POST"
		}
	}
	if ref == "" || !methodCell.MatchString(method) {
		return "", "", used, false
	}
	return method, ref, used, true
}

// shellFields splits a command line into words, honouring single and
// double quotes (no expansions).
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	in := byte(0)
	has := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case in != 0:
			if ch == in {
				in = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			in, has = ch, true
		case ch == ' ' || ch == '\t':
			if has || cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteByte(ch)
		}
	}
	if has || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// readPromises reads what mention m promises: in its own span, in the
// typed columns of its table row, and (unless shared) in the lines after
// it up to end, a section heading, or claimBlockLines.
func readPromises(c *Claim, lines []docLine, m endpointAt, shared bool, end int) {
	if m.row {
		rowPromises(c, lines[m.line], m.line+1)
		return
	}
	own := lines[m.line].text
	if m.end > m.start && m.end <= len(own) {
		own = own[m.start:m.end]
	}
	curlLine := strings.HasPrefix(strings.TrimPrefix(strings.TrimSpace(lines[m.line].text), "$ "), "curl ")
	if !curlLine {
		linePromises(c, own, m.line+1, false)
	}
	if shared {
		return
	}
	inResponse := false // after a "Response:" label
	afterCurl := curlLine
	for i := m.line + 1; i < end && i <= m.line+claimBlockLines; i++ {
		l := lines[i]
		t := strings.TrimSpace(l.text)
		if !l.code && heading.MatchString(l.text) && !responseLabel.MatchString(t) && !requestLabel.MatchString(t) {
			return // another section
		}
		switch {
		case responseLabel.MatchString(t):
			inResponse = true
			continue
		case requestLabel.MatchString(t):
			inResponse = false
			continue
		}
		if l.code && strings.HasPrefix(strings.TrimPrefix(t, "$ "), "curl ") {
			afterCurl = true
			continue
		}
		if l.code && (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && (inResponse || afterCurl) {
			// A response example: a JSON block after "Response:" or after a
			// curl command (its output).
			jsonExample(c, lines, i)
			continue
		}
		if l.cells != nil {
			if inResponse {
				fieldRow(c, l, i+1)
			}
			continue
		}
		if !l.code {
			linePromises(c, t, i+1, inResponse)
		}
	}
}

// linePromises reads one line (or span) of prose: response-type words and
// statuses after a response cue, response fields listed after a cue, a
// JSON object after a cue, and Content-Type headers outside requests.
// inResponse treats the whole line as about the answer.
func linePromises(c *Claim, t string, line int, inResponse bool) {
	cue := 0
	if !inResponse {
		loc := responseCue.FindStringIndex(t)
		if loc == nil {
			if m := typePhrase.FindStringSubmatch(t); m != nil && c.Type == "" && !requestCue.MatchString(t) {
				c.Type, c.TypeLine = TypeFamily(m[1]), line
			}
			return
		}
		cue = loc[0]
	}
	after := t[cue:]
	if c.Type == "" {
		if m := ctHeader.FindStringSubmatch(after); m != nil {
			c.Type, c.TypeLine = TypeFamily(m[1]), line
		} else if loc := typeWord.FindStringSubmatchIndex(after); loc != nil && loc[0] <= 60 {
			c.Type, c.TypeLine = TypeFamily(after[loc[2]:loc[3]]), line
		} else if m := typePhrase.FindStringSubmatch(after); m != nil {
			c.Type, c.TypeLine = TypeFamily(m[1]), line
		}
	}
	if c.Status == 0 {
		if m := statusCode.FindStringSubmatch(t); m != nil && !conditional(t) {
			c.Status, _ = strconv.Atoi(m[1] + m[2])
			c.StatusLine = line
		}
	}
	if len(c.Fields) == 0 {
		if m := fieldList.FindStringSubmatch(after); m != nil {
			for _, f := range backticked.FindAllStringSubmatch(m[1], -1) {
				if !slices.Contains(c.Fields, f[1]) {
					c.Fields = append(c.Fields, f[1])
				}
			}
			if len(c.Fields) > 0 {
				c.FieldsLine = line
			}
		} else if i := strings.IndexAny(after, "{"); i >= 0 {
			if keys := TopKeys(after[i:]); len(keys) > 0 {
				c.Fields, c.FieldsLine = keys, line
				if c.Type == "" {
					c.Type, c.TypeLine = "json", line
				}
			}
		}
	}
}

// conditional reports whether a status is promised only in some case
// ("200 if the name exists"): such promises are not checked.
var conditionalRE = regexp.MustCompile(`(?i)\b(?:if|when|unless|otherwise|only|once|after)\b`)

func conditional(t string) bool { return conditionalRE.MatchString(t) }

// rowPromises reads a table row's typed columns: a column whose header
// says returns, response, content type or format names the type; status
// names the status; fields names the fields.
func rowPromises(c *Claim, l docLine, line int) {
	for i, cell := range l.cells {
		h := ""
		if i < len(l.header) {
			h = l.header[i]
		}
		switch {
		case strings.Contains(h, "status") || strings.Contains(h, "code"):
			if m := successCode.FindStringSubmatch(cell); m != nil && c.Status == 0 {
				c.Status, _ = strconv.Atoi(m[1])
				c.StatusLine = line
			}
		case strings.Contains(h, "field") || strings.Contains(h, "key"):
			if c.Fields == nil {
				for _, f := range backticked.FindAllStringSubmatch(cell, -1) {
					c.Fields = append(c.Fields, f[1])
				}
				if c.Fields == nil {
					for _, f := range strings.FieldsFunc(cell, func(r rune) bool { return r == ',' || r == ' ' }) {
						if identifier.MatchString(f) && f != "and" && f != "or" {
							c.Fields = append(c.Fields, f)
						}
					}
				}
				if c.Fields != nil {
					c.FieldsLine = line
				}
			}
		case strings.Contains(h, "return") || strings.Contains(h, "response") || strings.Contains(h, "content") || strings.Contains(h, "format") || strings.Contains(h, "produces") || h == "type":
			if m := typeWord.FindStringSubmatch(cell); m != nil && c.Type == "" {
				c.Type, c.TypeLine = TypeFamily(m[1]), line
			}
			if c.Status == 0 {
				if m := successCode.FindStringSubmatch(cell); m != nil {
					c.Status, _ = strconv.Atoi(m[1])
					c.StatusLine = line
				}
			}
			if c.Fields == nil {
				if i := strings.IndexByte(cell, '{'); i >= 0 {
					c.Fields = TopKeys(cell[i:])
					if c.Fields != nil {
						c.FieldsLine = line
					}
				}
			}
		default:
			if c.Type == "" {
				linePromises(c, cell, line, false)
			}
		}
	}
}

// fieldRow reads a response-fields table row: the first cell names a
// field.
func fieldRow(c *Claim, l docLine, line int) {
	if len(l.header) == 0 || !(strings.Contains(l.header[0], "field") || strings.Contains(l.header[0], "name") || strings.Contains(l.header[0], "key") || strings.Contains(l.header[0], "property")) {
		return
	}
	f := strings.Trim(l.cells[0], "`*_ ")
	if identifier.MatchString(f) && !slices.Contains(c.Fields, f) {
		if c.Fields == nil {
			c.FieldsLine = line
		}
		c.Fields = append(c.Fields, f)
	}
}

// jsonExample reads the JSON example starting on line i (up to the end of
// its code block) for its top-level keys; it promises JSON.
func jsonExample(c *Claim, lines []docLine, i int) {
	var b strings.Builder
	for j := i; j < len(lines) && lines[j].code && !fence.MatchString(lines[j].text) && j < i+40; j++ {
		b.WriteString(lines[j].text)
		b.WriteByte('\n')
	}
	keys := TopKeys(b.String())
	if c.Type == "" {
		c.Type, c.TypeLine = "json", i+1
	}
	if len(c.Fields) == 0 && len(keys) > 0 {
		c.Fields, c.FieldsLine = keys, i+1
	}
}

// TopKeys returns the keys of the first JSON object in s (or of the first
// object in an array), tolerating elisions such as [...] or "..." and
// unquoted placeholders: a key is a quoted string followed by a colon at
// depth one.
func TopKeys(s string) []string {
	depth, target := 0, 1
	var keys []string
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '{':
			depth++
		case '[':
			if depth == 0 && target == 1 {
				target = 2 // an array of objects: read the first object
			}
			depth++
		case '}', ']':
			depth--
			if depth < target-1 || depth == target-1 && ch == '}' {
				return keys
			}
		case '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return keys
			}
			str := s[i+1 : j]
			k := j + 1
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if depth == target && k < len(s) && s[k] == ':' && str != "" && !slices.Contains(keys, str) {
				keys = append(keys, str)
			}
			i = j
		}
	}
	return keys
}

// TypeFamily maps a content type or a word to json, html, text, xml or
// markdown.
func TypeFamily(s string) string {
	s = strings.ToLower(s)
	switch {
	case strings.Contains(s, "json"):
		return "json"
	case strings.Contains(s, "html"):
		return "html"
	case strings.Contains(s, "markdown"):
		return "markdown"
	case strings.Contains(s, "xml"):
		return "xml"
	case strings.Contains(s, "plain"), strings.Contains(s, "text"):
		return "text"
	}
	return ""
}
