package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// enqueueResult is what a library Enqueue run measured.
type enqueueResult struct {
	events  int64
	commits int64
	elapsed time.Duration
}

func (r enqueueResult) rate() float64 { return float64(r.events) / r.elapsed.Seconds() }

// perCommit is the mean number of events per store commit (group commit at work).
func (r enqueueResult) perCommit() float64 { return float64(r.events) / float64(max(r.commits, 1)) }

// libraryEnqueue runs goroutines producers calling uploader.Client.Enqueue with one
// 535-byte event per call, queue.sync: always, for d. The client's endpoint is a
// paused collector (429 Retry-After: 300), so its worker sleeps and does not compete.
func libraryEnqueue(ctx context.Context, gen payloadFunc, dir, endpoint string, goroutines int, d time.Duration) (enqueueResult, error) {
	var commits atomic.Int64
	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = endpoint
	cfg.Queue.Sync = "always"
	cfg.Queue.MaxBytes = 64 << 30
	c, err := uploader.Open(cfg, uploader.WithHooks(uploader.Hooks{
		OnCommit: func(int, time.Duration) { commits.Add(1) },
	}))
	if err != nil {
		return enqueueResult{}, fmt.Errorf("open client: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(cctx)
	}()
	var (
		next    atomic.Int64
		done    atomic.Int64
		errOnce sync.Once
		firstEr error
		wg      sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	start := time.Now()
	for range goroutines {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				i := int(next.Add(1))
				if err := c.Enqueue(ctx, gen(i)); err != nil {
					errOnce.Do(func() { firstEr = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	res := enqueueResult{events: done.Load(), commits: commits.Load(), elapsed: time.Since(start)}
	if firstEr != nil {
		return res, fmt.Errorf("enqueue: %w", firstEr)
	}
	return res, nil
}
