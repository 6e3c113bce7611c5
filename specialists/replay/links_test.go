package replay

import "testing"

func TestAllowedURL(t *testing.T) {
	pats := []string{"127.0.0.1:8080", "*.example.com", "docs.test"}
	for url, want := range map[string]bool{
		"http://127.0.0.1:8080/x":      true,
		"http://127.0.0.1:8081/x":      false,
		"https://a.example.com/":       true,
		"https://example.com/":         false,
		"http://a.example.com:8443/":   false,
		"http://docs.test/llms.txt":    true,
		"https://docs.test:443/":       true,
		"ftp://docs.test/":             false,
		"http://evil.test/?docs.test":  false,
		"http://docs.test.evil.test/x": false,
	} {
		if got := AllowedURL(pats, url); got != want {
			t.Errorf("allowedURL(%q) = %v, want %v", url, got, want)
		}
	}
}
