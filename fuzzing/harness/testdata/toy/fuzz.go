//go:build gofuzz
// +build gofuzz

package toy

// Fuzz is a go-fuzz entry point.
func Fuzz(data []byte) int {
	if _, err := Parse(string(data)); err != nil {
		return 0
	}
	return 1
}
