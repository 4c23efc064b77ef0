package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// fillQueue stores events gen(first) … gen(first+n-1) in dir's queue, 1000 per commit
// without fsync (setup, not measured), and closes it.
func fillQueue(dir string, gen payloadFunc, first, n int) error {
	q, err := queue.Open(dir, queue.Config{NoSync: true, MaxBytes: 64 << 30})
	if err != nil {
		return fmt.Errorf("fill queue: %w", err)
	}
	chunk := make([][]byte, 0, 1000)
	for i := range n {
		chunk = append(chunk, gen(first+i))
		if len(chunk) == cap(chunk) || i == n-1 {
			if err := q.Enqueue(context.Background(), chunk...); err != nil {
				q.Close()
				return fmt.Errorf("fill queue: %w", err)
			}
			chunk = chunk[:0]
		}
	}
	if err := q.Close(); err != nil {
		return fmt.Errorf("fill queue: %w", err)
	}
	return nil
}

// drainResult is what an in-process drain measured.
type drainResult struct {
	events     int           // events queued at the start
	unique     int64         // distinct messageIds the sink accepted
	duplicates int64         // accepted again (a retried batch the sink had already taken)
	dead       int64         // events dead-lettered
	elapsed    time.Duration // first batch at the sink → the sink holds every event
	retries    map[string]int64
	waited     map[string]time.Duration
	rejected   int64 // requests the sink answered non-2xx
}

func (r drainResult) rate() float64 { return float64(r.unique) / r.elapsed.Seconds() }

// lost is what was enqueued and is neither at the sink nor dead-lettered.
func (r drainResult) lost() int64 { return int64(r.events) - r.unique }

// drainInProcess opens an uploader.Client (defaults: gzip, 500-event batches, sync always)
// on a queue already holding n events and measures how long until the sink playing script
// holds all n distinct messageIds.
func drainInProcess(ctx context.Context, dir string, n int, script sink.Script, limit time.Duration) (drainResult, error) {
	res := drainResult{events: n, retries: map[string]int64{}, waited: map[string]time.Duration{}}
	s, err := startSink(script)
	if err != nil {
		return res, err
	}
	defer s.Close()
	var mu sync.Mutex // guards res.retries and res.waited
	c, err := openClient(dir, s.endpoint(), uploader.WithHooks(uploader.Hooks{
		OnRetry: func(path string, wait time.Duration) {
			mu.Lock()
			res.retries[path]++
			res.waited[path] += wait
			mu.Unlock()
		},
	}))
	if err != nil {
		return res, err
	}
	defer closeClient(c)
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err = s.Wait(wctx, func(st sink.Stats) bool { return st.Unique >= int64(n) })
	done := time.Now()
	st := s.Stats()
	res.elapsed = done.Sub(s.firstAt())
	res.unique, res.duplicates, res.rejected = st.Unique, st.Duplicates, st.Rejected
	res.dead = c.Stats().Dead.Events
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		return res, fmt.Errorf("drain: sink holds %d of %d events after %s (dead %d): %w", st.Unique, n, limit, res.dead, err)
	}
	return res, nil
}
