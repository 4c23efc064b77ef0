package uploader_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkClientEnqueueAsync measures Client.EnqueueAsync from one goroutine, one ~535-byte
// event per call, queue.sync: always, up to every event's done (Flush waits for them). The
// collector answers 429 Retry-After: 300, so the worker sleeps and does not compete with
// intake. One op is one event; events/commit shows the group commit a single producer gets.
func BenchmarkClientEnqueueAsync(b *testing.B) {
	c, commits := openPausedClient(b)
	ev := []byte(benchEnqueueEvent())
	b.SetBytes(int64(len(ev)))
	var failed atomic.Int64
	done := func(err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := c.EnqueueAsync(ctx, done, ev); err != nil {
			b.Fatal(err)
		}
	}
	for c.Stats().Queue.PendingEvents > 0 {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d events failed", n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(max(commits.Load(), 1)), "events/commit")
}
