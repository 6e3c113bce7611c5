package record

import "testing"

// benchParse is a benchmark helper: compiled with the package's other test
// files, it needs B.SetParallelism and RunParallel from the stand-in.
func benchParse(b *testing.B, in []byte) {
	b.SetParallelism(2)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Parse(in)
		}
	})
}

func BenchmarkParse(b *testing.B) { benchParse(b, []byte("a=1;b=2")) }
