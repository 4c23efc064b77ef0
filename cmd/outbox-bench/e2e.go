package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
)

// e2eResult is what an end-to-end run measured.
type e2eResult struct {
	events     int
	unique     int64
	duplicates int64
	enqueued   time.Duration // first enqueue → last producer done
	elapsed    time.Duration // first enqueue → the sink holds every event
}

func (r e2eResult) rate() float64 { return float64(r.unique) / r.elapsed.Seconds() }

// libraryLoad is the end-to-end library run's load: events of gen into a fresh queue in dir,
// from producers goroutines perCall events per Enqueue, bounded by limit.
type libraryLoad struct {
	gen                        payloadFunc
	dir                        string
	events, producers, perCall int
	limit                      time.Duration
}

// e2eLibrary runs producers goroutines calling uploader.Client.Enqueue (one event per call,
// about 545 bytes, queue.sync: always) on a fresh queue while its worker drains to a live
// loopback sink with gzip, and measures from the first Enqueue until the sink holds all n
// distinct messageIds.
func e2eLibrary(ctx context.Context, l libraryLoad) (e2eResult, error) {
	gen, dir, n, producers, perCall, limit := l.gen, l.dir, l.events, l.producers, l.perCall, l.limit
	res := e2eResult{events: n}
	s, err := startSink(sink.Script{})
	if err != nil {
		return res, err
	}
	defer s.Close()
	c, err := openClient(dir, s.endpoint())
	if err != nil {
		return res, err
	}
	defer closeClient(c)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var (
		next    atomic.Int64
		errOnce sync.Once
		firstEr error
		wg      sync.WaitGroup
	)
	calls := (n + perCall - 1) / perCall
	start := time.Now()
	for range producers {
		wg.Go(func() {
			evs := make([]any, 0, perCall)
			for {
				k := int(next.Add(1)) - 1
				if k >= calls || ctx.Err() != nil {
					return
				}
				evs = evs[:0]
				for i := k * perCall; i < min((k+1)*perCall, n); i++ {
					evs = append(evs, gen(i))
				}
				if err := c.Enqueue(ctx, evs...); err != nil {
					errOnce.Do(func() { firstEr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	res.enqueued = time.Since(start)
	if firstEr != nil {
		return res, fmt.Errorf("enqueue: %w", firstEr)
	}
	err = s.Wait(ctx, func(st sink.Stats) bool { return st.Unique >= int64(n) })
	res.elapsed = time.Since(start)
	st := s.Stats()
	res.unique, res.duplicates = st.Unique, st.Duplicates
	if err != nil {
		return res, fmt.Errorf("end to end: sink holds %d of %d events: %w", st.Unique, n, err)
	}
	return res, nil
}
