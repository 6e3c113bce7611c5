package decode

import (
	"testing"

	"example.com/realshapes/fuzzhelp"
)

func FuzzDecode(f *testing.F) {
	f.Add([]byte("a=1"), "s", true, byte(1), rune('r'), float32(1.5), float64(2.5), int(-3), int8(-4), int16(-5), int32(-6), int64(-7), uint(8), uint8(9), uint16(10), uint32(11), uint64(12))
	f.Fuzz(func(t *testing.T, b []byte, s string, ok bool, c byte, r rune, x float32, y float64, i int, i8 int8, i16 int16, i32 int32, i64 int64, u uint, u8 uint8, u16 uint16, u32 uint32, u64 uint64) {
		fuzzhelp.Check(t, Decode(b) >= -1, "bad count")
	})
}
