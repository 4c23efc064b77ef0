package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxhq/outbox/pkg/errs"
)

// EnqueueAsync appends events (already normalised) at the tail without waiting for the
// commit. done is called exactly once, from the store's committing goroutine (or, under
// WhenFull block, from a goroutine that waited for room), with nil once the events are
// committed (and fsynced unless NoSync), or with the error that kept them out: errs.ErrQueueFull under
// reject, errs.ErrClosed when the queue closes first, the store's write error. done must return quickly and
// must not call the queue. Pending events share commits with everything else the writer has
// waiting, so one producer fills commits of many events. The events' bytes are copied before
// EnqueueAsync returns: the caller may reuse its buffer at once.
//
// WhenFull applies at commit: reject answers errs.ErrQueueFull through done, drop_oldest evicts from the
// head, and block waits for room (until the queue closes) and tries again; the events are then
// queued after events enqueued while they waited.
//
// It returns an error, and done is not called, when the events alone total more than
// MaxBytes (errs.ErrTooLarge, wrapped), when the queue is closed (errs.ErrClosed), and when ctx ends
// while the writer's intake is full (ctx.Err()). ctx bounds only that hand-off.
func (q *Queue) EnqueueAsync(ctx context.Context, done func(error), events ...[]byte) error {
	return q.enqueueAsync(ctx, DefaultSource, false, done, events)
}

// EnqueueAwaited is EnqueueAsync for a caller that waits for done (Enqueue, and the
// client's synchronous Enqueue built the same way). ctx bounds the whole call: the hand-off,
// the wait for room under block, and the commit. When ctx ends first, done gets ctx.Err() and
// the events may or may not have been stored.
func (q *Queue) EnqueueAwaited(ctx context.Context, done func(error), events ...[]byte) error {
	return q.enqueueAsync(ctx, DefaultSource, true, done, events)
}

// enqueueAsync is the queue's one intake path: Enqueue, EnqueueAsync and EnqueueAwaited all
// append here. awaited says the caller waits for done, so ctx bounds its commit too.
func (q *Queue) enqueueAsync(ctx context.Context, source string, awaited bool, done func(error), events [][]byte) error {
	cb := done // the store's errors are the queue's (errs.ErrQueueFull, errs.ErrClosed are the same values)
	if q.cfg.WhenFull == Block {
		// The events may have to be appended again after the caller got its buffer back.
		events = cloneEvents(events)
		room := q.s.Room() // before the append, so that room freed after its answer is not missed
		cb = func(err error) {
			if errors.Is(err, errs.ErrQueueFull) {
				go q.retryWhenRoom(ctx, source, awaited, room, events, done)
				return
			}
			done(err)
		}
	}
	var err error
	if awaited {
		err = q.s.AppendAwaitedIn(ctx, source, events, cb)
	} else {
		err = q.s.AppendAsyncIn(ctx, source, events, cb)
	}
	if err != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("enqueue: %w", err)
	}
	return err
}

// retryWhenRoom waits until stored bytes go down (or the queue closes, or an awaited call's
// ctx ends), then appends events again, asynchronously as before.
func (q *Queue) retryWhenRoom(ctx context.Context, source string, awaited bool, room <-chan struct{}, events [][]byte, done func(error)) {
	var ended <-chan struct{}
	if awaited {
		ended = ctx.Done()
	} else {
		ctx = context.Background() // the hand-off of the first try was the only thing ctx bounded
	}
	select {
	case <-room:
	case <-q.s.Closing():
		done(errs.ErrClosed)
		return
	case <-ended:
		done(ctx.Err())
		return
	}
	if err := q.enqueueAsync(ctx, source, awaited, done, events); err != nil {
		done(err)
	}
}

// cloneEvents copies events into one block of their own.
func cloneEvents(events [][]byte) [][]byte {
	n := 0
	for _, e := range events {
		n += len(e)
	}
	block := make([]byte, 0, n)
	out := make([][]byte, len(events))
	for i, e := range events {
		start := len(block)
		block = append(block, e...)
		out[i] = block[start:len(block):len(block)]
	}
	return out
}
