// Package crawl discovers the URLs a web surface links to. It is pure: it
// fetches nothing, it only reads bodies someone else fetched, so the
// playbooks (which replay their program on every turn and must choose every
// qa_fetch themselves) can call it over recorded results and get the same
// answer every time.
//
// Links extracts the outgoing references of one response, whatever its
// kind: HTML (a, area, link, script, img and srcset, source, iframe, frame,
// embed, object, media, form action with its method, formaction, meta
// refresh, base href, plus the URLs in inline scripts, inline JSON and
// style), markdown and plain text (inline, reference-style and autolinks,
// bare URLs, root-relative paths in code spans), JavaScript (string
// literals that hold a URL or a path), JSON (string values that hold a URL
// or a path), CSS (url() and @import), XML sitemaps (loc) and robots.txt
// (Sitemap, Allow and Disallow). Every URL comes back absolute, resolved
// against the page (or its base element), without its fragment, http or
// https only.
//
// Frontier is the crawl's queue: breadth first, each normalized URL once,
// limited to a scope the caller decides (the fetch allowlist), with a cap
// on URLs that share a template (the same path with ids and numbers
// blanked and the same query keys), so a listing of a thousand items costs
// a few fetches, not the page budget.
//
// Fill replaces template placeholders in a documented URL ({name}, NAME,
// :name, <name>, [name]) with a real value.
package crawl
