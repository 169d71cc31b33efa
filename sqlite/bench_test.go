package sqlite_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
)

// BenchmarkConcurrentFiling files captures from many goroutines at once,
// as captures in flight do, on a file in the test's temporary directory
// (synchronous=FULL: each commit waits for the disk). One op is one
// capture filed; files/s is the throughput.
func BenchmarkConcurrentFiling(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "brainwire.db"))
	var i atomic.Int64
	b.SetParallelism(32) // 32 goroutines per GOMAXPROCS
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.File(b.Context(), filing("bench", int(i.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
}
