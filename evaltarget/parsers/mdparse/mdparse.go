// Package mdparse renders Markdown with blackfriday v2.1.0, whose
// reference-link scanner indexes past the end of some inputs (see the
// parent package).
package mdparse

import blackfriday "github.com/russross/blackfriday/v2"

// Render renders b to HTML with the common extensions.
func Render(b []byte) []byte { return blackfriday.Run(b) }
