package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// minPoll is the shortest pause between two Flush calls while the worker waits on a budget, so
// a wait that has just ended (but whose state is not yet updated) costs no busy loop.
const minPoll = 10 * time.Millisecond

// drain flushes until the queue is empty: every batch delivered or dead-lettered. A retry wait
// is transient: drain sleeps until it ends and flushes again. It gives up at once when the
// wait would end after ctx's deadline (the queue cannot empty in time), and returns the error
// that holds the head batch (a *delivery.ConfigError) or ctx's error.
func drain(ctx context.Context, c *uploader.Client) error {
	for {
		err := c.Flush(ctx)
		var we *uploader.WaitingError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &we):
			if dl, ok := ctx.Deadline(); ok && we.Until.After(dl) {
				err := fmt.Errorf("%w: the %s wait ends at %s, after the --timeout deadline",
					errDeadline, we.Path, we.Until.UTC().Format(time.RFC3339))
				if we.Err != nil {
					err = fmt.Errorf("%w (last attempt: %w)", err, we.Err)
				}
				return err
			}
			if err := sleep(ctx, max(time.Until(we.Until), minPoll)); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tally counts batch outcomes through the uploader's hooks (OnDelivered runs on its acker goroutine,
// OnDeadLetter on its worker goroutine, hence the mutex).
type tally struct {
	mu         sync.Mutex // guards the fields below
	delivered  int
	dead       int
	deadEvents int
	firstDead  string // reason of the first dead-lettered batch
}

// hooks returns the uploader callbacks that feed the tally.
func (t *tally) hooks() uploader.Hooks {
	return uploader.Hooks{
		OnDelivered: func(uploader.BatchInfo) {
			t.mu.Lock()
			t.delivered++
			t.mu.Unlock()
		},
		OnDeadLetter: func(b uploader.BatchInfo, reason string) {
			t.mu.Lock()
			t.dead++
			t.deadEvents += b.Events
			if t.firstDead == "" {
				t.firstDead = reason
			}
			t.mu.Unlock()
		},
	}
}

// sentBatches is the number of batches the collector accepted.
func (t *tally) sentBatches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivered
}

// deadSummary describes the batches that finally failed, "" when none did.
func (t *tally) deadSummary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead == 0 {
		return ""
	}
	return fmt.Sprintf("%d batch(es) with %d event(s) failed; first: %s", t.dead, t.deadEvents, t.firstDead)
}
