package store_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/store"
)

// BenchmarkOpen measures Open on a file holding many queued events of 545 bytes, closed
// cleanly: the lock, the validating walk of the file, bbolt's open and the counters loaded, the
// library's share of make bench's restart to ready. The check of every record runs in the
// background above 64 MiB and is not timed (Close aborts it; Close is not timed either).
// cpu-ns/op is the process's CPU time (user+sys) per Open, which a busy machine disturbs less
// than the wall time.
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			s, err := store.Open(dir, store.Options{NoSync: true, CompactMinBytes: -1})
			if err != nil {
				b.Fatal(err)
			}
			ev := bytes.Repeat([]byte("x"), 545)
			call := make([][]byte, 1000)
			for i := range call {
				call[i] = ev
			}
			for done := 0; done < n; done += len(call) {
				if err := s.Append(context.Background(), call); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			var cpu time.Duration
			opens := 0
			for b.Loop() {
				c := cpuTime()
				s, err := store.Open(dir, store.Options{CompactMinBytes: -1})
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c
				opens++
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(opens), "cpu-ns/op")
		})
	}
}
