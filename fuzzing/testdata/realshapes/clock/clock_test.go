package clock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"example.com/realshapes/clock"
)

func FuzzBursts(f *testing.F) {
	f.Add([]byte("aaab"))
	f.Fuzz(func(t *testing.T, b []byte) {
		synctest.Test(t, func(t *testing.T) {
			done := make(chan int, 1)
			go func() {
				time.Sleep(time.Millisecond)
				done <- clock.Bursts(b)
			}()
			synctest.Wait()
			if n := <-done; n > len(b)/3 {
				t.Fatalf("%d bursts in %d bytes", n, len(b))
			}
		})
	})
}
