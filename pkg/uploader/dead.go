package uploader

import (
	"context"

	"github.com/outboxhq/outbox/pkg/queue"
)

// DeadBatch is one dead-letter batch: its ID, when and why it was dead-lettered (Info), its
// size, and its events when read one at a time (DeadLetters.Get).
type DeadBatch = queue.DeadBatch

// DeadLetters manages the dead letters of a data directory: the batches the destination
// rejected for good or whose retry budget ran out, each with its reason. Replay moves batches
// back to the tail of the queue; Purge deletes them.
type DeadLetters struct {
	q *queue.Queue
}

// DeadLetters returns the dead-letter management of the client's queue.
func (c *Client) DeadLetters() *DeadLetters { return &DeadLetters{q: c.q} }

// List returns every dead batch, oldest first, without its events.
func (d *DeadLetters) List() ([]DeadBatch, error) { return d.q.DeadList() }

// Get returns one dead batch with its events; an unknown id is errs.ErrNotFound.
func (d *DeadLetters) Get(id string) (DeadBatch, error) { return d.q.DeadGet(id) }

// Replay moves dead batches (every one when ids is empty) back to the tail of the queue, oldest
// first, in one transaction, and returns how many events it re-queued. When they do not fit in
// queue.max_bytes now it returns errs.ErrQueueFull, when they exceed it together errs.ErrTooLarge; nothing
// moves then.
func (d *DeadLetters) Replay(ctx context.Context, ids ...string) (int, error) {
	return d.q.DeadReplay(ctx, ids...)
}

// Purge deletes dead batches (every one when ids is empty) and returns how many it deleted.
func (d *DeadLetters) Purge(ctx context.Context, ids ...string) (int, error) {
	return d.q.DeadPurge(ctx, ids...)
}
