package uploader

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/sink"
)

// benchEvents is the queue size each drain iteration empties. The full-size run (1,000,000
// events) is the bench tool's job; this keeps `go test -bench` short.
const benchEvents = 20000

// fillQueue writes n events into dir's queue and closes it.
func fillQueue(b *testing.B, dir string, n int) {
	b.Helper()
	q, err := queue.Open(dir, queue.Config{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([][]byte, 0, 1000)
	for i := 0; i < n; i++ {
		chunk = append(chunk, testutil.BenchEvent(i))
		if len(chunk) == cap(chunk) || i == n-1 {
			if err := q.Enqueue(context.Background(), chunk...); err != nil {
				b.Fatal(err)
			}
			chunk = chunk[:0]
		}
	}
	if err := q.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDrain measures events/s from a pre-filled queue into a loopback sink, with gzip on
// and off (acks not fsynced), and with gzip and fsync'd acks (queue.sync: always, the default).
// pkg/httpdest's BenchmarkEncode is the gzip-only ceiling beside it.
func BenchmarkDrain(b *testing.B) {
	for _, run := range []struct {
		gz   bool
		sync string
	}{{true, "none"}, {false, "none"}, {true, "always"}} {
		gz := run.gz
		name := fmt.Sprintf("gzip=%t", gz)
		if run.sync != "none" {
			name += "/sync=" + run.sync
		}
		b.Run(name, func(b *testing.B) {
			s, err := sink.Start("127.0.0.1:0", sink.Options{DiscardEvents: true, NoValidate: true, MaxRequests: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := b.TempDir()
				fillQueue(b, dir, benchEvents)
				cfg := DefaultConfig()
				cfg.DataDir = dir
				cfg.Upload.Endpoint = s.URL() + "/v1/batch"
				cfg.Upload.Gzip = gz
				cfg.Queue.Sync = run.sync
				want := s.Stats().Events + benchEvents
				b.StartTimer()
				start := time.Now()
				c, err := openHTTP(cfg)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				err = s.Wait(ctx, func(st sink.Stats) bool { return st.Events >= want })
				total += time.Since(start)
				b.StopTimer()
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				_ = c.Close(context.Background())
				b.StartTimer()
			}
			b.ReportMetric(float64(benchEvents*b.N)/total.Seconds(), "events/s")
		})
	}
}
