package uploader

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/queue"
)

// Offline is the data directory of a stopped agent or application, opened without a worker:
// for inspection and dead-letter management, with nothing uploaded. The directory is locked
// while it is open, so OpenOffline fails at once while an agent runs on it.
type Offline struct {
	cfg Config
	q   *queue.Queue
}

// OpenOffline opens cfg.DataDir (after filling zero values of cfg with defaults) without
// starting a worker. Close releases it.
func OpenOffline(cfg Config) (*Offline, error) {
	cfg = cfg.withDefaults()
	qc, err := queueConfig(cfg, options{})
	if err != nil {
		return nil, err
	}
	q, err := queue.Open(cfg.DataDir, qc)
	if err != nil {
		return nil, fmt.Errorf("uploader: %w", err)
	}
	return &Offline{cfg: cfg, q: q}, nil
}

// Stats returns the queue, dead-letter and store parts of Stats (the worker's are empty).
func (o *Offline) Stats() Stats {
	s := Stats{Store: StoreStats{Sync: o.cfg.Queue.Sync}, Retry: RetryStats{Path: PathNone}}
	fillQueueStats(&s, o.q.Stats(), time.Now())
	return s
}

// Head is the start of the queue: its oldest events and the retry state of the batch at the
// head.
type Head struct {
	Events   [][]byte // the oldest events, oldest first
	Attempts int      // attempts of the head batch so far (its next X-Retry-Count)
	Retries  int      // counted retries it has spent
}

// Head returns the n oldest events and the head batch's retry state.
func (o *Offline) Head(n int) (Head, error) {
	b, err := o.q.Lease(context.Background(), n, 1<<30)
	if err != nil || b == nil {
		return Head{}, err
	}
	st := b.RetryState()
	return Head{Events: b.Events, Attempts: st.Attempts, Retries: st.Retries}, nil
}

// DeadLetters returns the dead-letter management of the directory.
func (o *Offline) DeadLetters() *DeadLetters { return &DeadLetters{q: o.q} }

// Close releases the data directory.
func (o *Offline) Close() error { return o.q.Close() }
