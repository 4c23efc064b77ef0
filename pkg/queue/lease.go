package queue

import (
	"context"
	"fmt"

	"github.com/outboxhq/outbox/pkg/budget"
)

// Lease is a batch read from the queue (Lease, LeaseAfter) that owns what happens to it: Ack,
// Retry, DeadLetter, Split and Release. It stays stored, at its place in the queue, until Ack
// or DeadLetter; each of them touches only its own keys, in one transaction under the
// caller's context, so leases in flight together settle in any order from several
// goroutines (their commits share the store's group commit).
type Lease struct {
	*Batch
	q *Queue
}

// lease wraps a batch the store read; nil stays nil.
func (q *Queue) lease(b *Batch) *Lease {
	if b == nil {
		return nil
	}
	return &Lease{Batch: b, q: q}
}

// empty reports a lease with no events to settle (nil, or no batch).
func (l *Lease) empty() bool { return l == nil || l.Batch == nil || len(l.Keys()) == 0 }

// Ack deletes the lease's events (and its retry state) from its source (Batch.Source) in one
// transaction: the destination has them.
func (l *Lease) Ack(ctx context.Context) error {
	if l.empty() {
		return nil
	}
	if err := l.q.s.DeleteIn(ctx, l.Source, l.Keys()); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	return nil
}

// Retry saves st as the lease's retry state, kept across a restart: after one Lease or
// LeaseAfter returns the same batch, whole, with st (RetryState). The queue encodes it; the
// store keeps the bytes. It is ignored when the batch has left the queue.
func (l *Lease) Retry(ctx context.Context, st budget.State) error {
	if l.empty() {
		return nil
	}
	enc := encodeRetry(st)
	if err := l.q.s.SaveRetryIn(ctx, l.Source, l.Keys()[0], len(l.Keys()), enc); err != nil {
		return fmt.Errorf("save retry state: %w", err)
	}
	l.Batch.Retry = enc
	return nil
}

// RetryState returns the retry state saved for the lease (Retry), zero when none. One that
// cannot be read is logged and read as zero, so that the batch retries afresh.
func (l *Lease) RetryState() budget.State {
	if l == nil || l.Batch == nil || l.Batch.Retry == nil {
		return budget.State{}
	}
	st, err := decodeRetry(l.Batch.Retry)
	if err != nil {
		l.q.log.Warn("saved retry state unreadable; starting afresh", "error", err)
		return budget.State{}
	}
	return st
}

// DeadLetter moves the lease's events, with why (its Body cut to MaxBodySnippet), into the
// dead-letter bucket in one transaction; the dead batch records its source, and a replay puts
// it back there. Past DeadMaxBytes the oldest dead batches are
// dropped.
func (l *Lease) DeadLetter(ctx context.Context, why DeadInfo) error {
	if l.empty() {
		return nil
	}
	if err := l.q.s.MoveDeadIn(ctx, l.Source, l.Keys(), why); err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	return nil
}

// Split returns the two halves of the lease, each a lease of its own with no retry state
// (Batch.Split). A lease of fewer than two events cannot be split: Split returns l and nil.
func (l *Lease) Split() (*Lease, *Lease) {
	if l.empty() {
		return l, nil
	}
	a, b := l.Batch.Split()
	if b == nil {
		return l, nil
	}
	return l.q.lease(a), l.q.lease(b)
}

// Release hands the lease's event memory back for later reads (Batch.Release), once nothing
// refers to its Events any more; it can still be acked, dead-lettered or read after.
func (l *Lease) Release() {
	if l != nil && l.Batch != nil {
		l.Batch.Release()
	}
}
