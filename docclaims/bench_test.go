package docclaims

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkClaims reads a 40-endpoint API reference in mixed styles.
func BenchmarkClaims(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("# API\n\n| Method | Path | Returns |\n|---|---|---|\n")
	for i := range 10 {
		fmt.Fprintf(&doc, "| GET | /v1/t%d | JSON |\n", i)
	}
	for i := range 10 {
		fmt.Fprintf(&doc, "\n## Item %d\n\n- `GET /v1/items/%d` returns the item with fields `id` and `name`.\n\n```\n$ curl https://api.test/v1/c%d\n{\"id\": 1, \"name\": \"x\"}\n```\n", i, i, i)
		fmt.Fprintf(&doc, "Send a POST request to /v1/p%d with a JSON body. It responds with 201 Created.\n", i)
		fmt.Fprintf(&doc, "The `/v1/s%d` endpoint returns plain text. Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n", i)
	}
	text := doc.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if n := len(Claims("https://api.test/docs/api.md", "text/markdown", text)); n != 50 {
			b.Fatalf("%d claims", n)
		}
	}
}
