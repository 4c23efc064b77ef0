package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/segment"
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

// openClient opens an uploader.Client with the defaults (gzip, 500-event batches,
// queue.sync: always) on dir, uploading to endpoint, with a 64 GiB queue so that no run
// meets the quota.
func openClient(dir, endpoint string, opts ...uploader.Option) (*uploader.Client, error) {
	return openClientWith(dir, endpoint, nil, opts...)
}

// openClientWith is openClient with edit applied to the configuration first (nil: none).
func openClientWith(dir, endpoint string, edit func(*uploader.Config), opts ...uploader.Option) (*uploader.Client, error) {
	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	cfg.Upload.Endpoint = endpoint
	cfg.Queue.Sync = "always"
	cfg.Queue.MaxBytes = 64 << 30
	if edit != nil {
		edit(&cfg)
	}
	c, err := segment.Open(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("open client: %w", err)
	}
	return c, nil
}

// closeClient closes c, giving its worker a second to stop.
func closeClient(c *uploader.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// enqueueLoad is one library Enqueue run: goroutines producers of gen's events for d, into a
// queue in dir whose client uploads to endpoint.
type enqueueLoad struct {
	gen           payloadFunc
	dir, endpoint string
	goroutines    int
	d             time.Duration
}

// libraryEnqueue runs goroutines producers calling uploader.Client.Enqueue with one
// 545-byte event per call, queue.sync: always, for d. The client's endpoint is a
// paused collector (429 Retry-After: 300), so its worker sleeps and does not compete.
func libraryEnqueue(ctx context.Context, l enqueueLoad) (enqueueResult, error) {
	gen, dir, endpoint, goroutines, d := l.gen, l.dir, l.endpoint, l.goroutines, l.d
	var commits atomic.Int64
	c, err := openClient(dir, endpoint, uploader.WithHooks(uploader.Hooks{
		OnCommit: func(int, time.Duration) { commits.Add(1) },
	}))
	if err != nil {
		return enqueueResult{}, err
	}
	defer closeClient(c)
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
