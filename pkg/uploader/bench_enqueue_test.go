package uploader_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// BenchmarkClientEnqueue measures Client.Enqueue with one ~535-byte event per call
// (validated and normalised, as the library does), queue.sync: always, from 1, 8 and 64
// goroutines. The collector answers 429 Retry-After: 300, so the worker sleeps and does not
// compete with intake. One op is one event.
func BenchmarkClientEnqueue(b *testing.B) {
	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) { benchClientEnqueue(b, g) })
	}
}

func benchClientEnqueue(b *testing.B, goroutines int) {
	c, commits := openPausedClient(b)
	ev := []byte(benchEnqueueEvent())
	b.SetBytes(int64(len(ev)))
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	b.ResetTimer()
	for range goroutines {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := c.Enqueue(ctx, ev); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(max(commits.Load(), 1)), "events/commit")
}

// benchEnqueueEvent is a track event of about 535 bytes with no messageId or timestamp, so
// that Normalize adds both (the library's usual case).
func benchEnqueueEvent() string {
	return `{"type":"track","event":"Benchmark Event","userId":"user-00000042",` +
		`"properties":{"plan":"pro","amount":42.5,"pad":"` + strings.Repeat("abcdefghij", 36) + `"},` +
		`"context":{"library":{"name":"outbox","version":"dev"}}}`
}

// openPausedClient opens a client with queue.sync: always on a collector that answers 429
// Retry-After: 300, so the worker sleeps and does not compete with intake; commits counts the
// store's commits. The client and the collector are closed at cleanup.
func openPausedClient(b *testing.B) (*uploader.Client, *atomic.Int64) {
	b.Helper()
	paused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "300")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	b.Cleanup(paused.Close)
	commits := new(atomic.Int64)
	cfg := uploader.DefaultConfig()
	cfg.DataDir = b.TempDir()
	cfg.Upload.Endpoint = paused.URL
	cfg.Upload.WriteKey = "wk_bench"
	cfg.Queue.Sync = "always"
	cfg.Queue.MaxBytes = 64 << 30
	c, err := segment.Open(cfg, uploader.WithHooks(uploader.Hooks{
		OnCommit: func(int, time.Duration) { commits.Add(1) },
	}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c, commits
}
