// Package clock is a fuzz-target shape: a fuzz function whose body runs
// inside testing/synctest's bubble.
package clock

// Bursts counts the runs of equal bytes in b longer than two.
func Bursts(b []byte) int {
	n, run := 0, 1
	for i := 1; i < len(b); i++ {
		if b[i] == b[i-1] {
			run++
			if run == 3 {
				n++
			}
		} else {
			run = 1
		}
	}
	return n
}
