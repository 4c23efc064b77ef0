package uploader

import (
	"context"

	"github.com/outboxhq/outbox/pkg/queue"
)

// DeadBatch is one dead-letter batch: its ID, when and why it was dead-lettered (Info), its
// size, and its events when read one at a time (DeadLetters.Get).
type DeadBatch = queue.DeadBatch

// DeadInfo is why and how a batch was dead-lettered: its reason (one of DeadReasons), the last
// answer's code, a sentence saying why, its attempts, its source and how many times its
// events were replayed before they died this time.
type DeadInfo = queue.DeadInfo

// DeadFilter picks dead batches by source, dead-letter time, last answer's code and reason;
// the zero value matches every one. ParseDeadFilter reads one from text.
type DeadFilter = queue.DeadFilter

// DeadResult is what a replay or a purge of dead batches acted on.
type DeadResult = queue.DeadResult

// The reasons a batch is dead-lettered (DeadInfo.Reason, DeadFilter.Reason).
const (
	DeadRejected    = queue.DeadRejected    // the destination refused it for good
	DeadTooLarge    = queue.DeadTooLarge    // the destination refused it as too large, and it could not be split
	DeadBudgetSpent = queue.DeadBudgetSpent // its retry budget ran out
)

// DeadReasons returns the reasons a batch is dead-lettered.
func DeadReasons() []string { return queue.DeadReasons() }

// DeadLetters manages the dead letters of a data directory: the batches the destination
// rejected for good or whose retry budget ran out, each with its reason. Replay moves batches
// back to the tail of the queue, their events byte for byte (messageIds unchanged), and counts
// the replay; Purge deletes them. The Matching methods pick batches with a DeadFilter.
type DeadLetters struct {
	q *queue.Queue
}

// DeadLetters returns the dead-letter management of the client's queue.
func (c *Client) DeadLetters() *DeadLetters { return &DeadLetters{q: c.q} }

// List returns every dead batch, oldest first, without its events.
func (d *DeadLetters) List() ([]DeadBatch, error) { return d.q.DeadList() }

// ListMatching returns the dead batches f matches, oldest first, without their events.
func (d *DeadLetters) ListMatching(f DeadFilter) ([]DeadBatch, error) {
	return d.q.DeadListMatching(f)
}

// Get returns one dead batch with its events; an unknown id is errs.ErrNotFound.
func (d *DeadLetters) Get(id string) (DeadBatch, error) { return d.q.DeadGet(id) }

// Replay moves dead batches (every one when ids is empty) back to the tail of the queue, oldest
// first, in one transaction, and returns how many events it re-queued. When they do not fit in
// queue.max_bytes now it returns errs.ErrQueueFull, when they exceed it together errs.ErrTooLarge; nothing
// moves then.
func (d *DeadLetters) Replay(ctx context.Context, ids ...string) (int, error) {
	return d.q.DeadReplay(ctx, ids...)
}

// ReplayMatching is Replay of the dead batches f matches (every one for the zero DeadFilter);
// it returns how many batches and events it re-queued.
func (d *DeadLetters) ReplayMatching(ctx context.Context, f DeadFilter) (DeadResult, error) {
	return d.q.DeadReplayMatching(ctx, f)
}

// Purge deletes dead batches (every one when ids is empty) and returns how many it deleted.
func (d *DeadLetters) Purge(ctx context.Context, ids ...string) (int, error) {
	return d.q.DeadPurge(ctx, ids...)
}

// PurgeMatching deletes the dead batches f matches (every one for the zero DeadFilter) and
// returns how many batches and events it deleted.
func (d *DeadLetters) PurgeMatching(ctx context.Context, f DeadFilter) (DeadResult, error) {
	return d.q.DeadPurgeMatching(ctx, f)
}
