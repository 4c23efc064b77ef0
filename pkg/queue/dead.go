package queue

import (
	"context"
	"fmt"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/segmentio/ksuid"
)

// DeadBatch is one dead-letter batch, as the store reads it: its ID (pass it to DeadGet,
// DeadReplay and DeadPurge), when and why it was dead-lettered, its size, and its events when
// read one at a time (DeadGet).
type DeadBatch = store.DeadBatch

// DeadInfo is why and how a batch was dead-lettered; the store saves it with the batch.
type DeadInfo = store.DeadInfo

// MaxBodySnippet bounds DeadInfo.Body as stored.
const MaxBodySnippet = store.MaxBodySnippet

// DeadFilter picks dead batches by source, dead-letter time, last status and reason; the zero
// value matches every one.
type DeadFilter = store.DeadFilter

// DeadResult is what a replay or a purge of dead batches acted on.
type DeadResult = store.DeadResult

// The reasons a batch is dead-lettered (DeadInfo.Reason).
const (
	DeadRejected    = store.DeadRejected
	DeadTooLarge    = store.DeadTooLarge
	DeadBudgetSpent = store.DeadBudgetSpent
)

// DeadReasons returns the reasons a batch is dead-lettered.
func DeadReasons() []string { return store.DeadReasons() }

// DeadList returns every dead batch, oldest first, without events.
func (q *Queue) DeadList() ([]DeadBatch, error) {
	list, err := q.s.DeadList()
	if err != nil {
		return nil, fmt.Errorf("dead list: %w", err)
	}
	return list, nil
}

// DeadListMatching returns the dead batches f matches, oldest first, without events.
func (q *Queue) DeadListMatching(f DeadFilter) ([]DeadBatch, error) {
	list, err := q.s.DeadListMatching(f)
	if err != nil {
		return nil, fmt.Errorf("dead list: %w", err)
	}
	return list, nil
}

// DeadGet returns one dead batch with its events, or errs.ErrNotFound.
func (q *Queue) DeadGet(id string) (DeadBatch, error) {
	k, err := parseID(id)
	if err != nil {
		return DeadBatch{}, err
	}
	d, err := q.s.DeadGet(k)
	if err != nil {
		return DeadBatch{}, fmt.Errorf("dead batch %s: %w", id, err)
	}
	return d, nil
}

// DeadReplay moves dead batches (every one when ids is empty) back to the
// tail of their source's queue with new keys, oldest batch first and event order kept, each
// event byte for byte (its messageId unchanged), in one transaction. It returns how many events were re-queued, or errs.ErrQueueFull
// when they do not fit in MaxBytes now, or errs.ErrTooLarge (wrapped) when they
// total more than MaxBytes (replay fewer batches); nothing moves then.
func (q *Queue) DeadReplay(ctx context.Context, ids ...string) (int, error) {
	keys, err := parseIDs(ids)
	if err != nil {
		return 0, err
	}
	n, err := q.s.Replay(ctx, keys)
	if err != nil {
		return 0, fmt.Errorf("dead replay: %w", err)
	}
	return n, nil
}

// DeadReplayMatching is DeadReplay of the dead batches f matches when it commits (every one for
// the zero DeadFilter); it returns how many batches and events it re-queued. Each re-queued
// batch's replays are counted: a batch its events form that is dead-lettered again records
// one more replay than the batch they were (DeadInfo.Replays).
func (q *Queue) DeadReplayMatching(ctx context.Context, f DeadFilter) (DeadResult, error) {
	res, err := q.s.ReplayMatching(ctx, f)
	if err != nil {
		return DeadResult{}, fmt.Errorf("dead replay: %w", err)
	}
	return res, nil
}

// DeadPurgeMatching deletes the dead batches f matches when it commits (every one for the
// zero DeadFilter) and returns how many batches and events it deleted.
func (q *Queue) DeadPurgeMatching(ctx context.Context, f DeadFilter) (DeadResult, error) {
	res, err := q.s.PurgeMatching(ctx, f)
	if err != nil {
		return DeadResult{}, fmt.Errorf("dead purge: %w", err)
	}
	return res, nil
}

// DeadPurge deletes dead batches (every one when ids is empty) and returns
// how many batches were deleted.
func (q *Queue) DeadPurge(ctx context.Context, ids ...string) (int, error) {
	keys, err := parseIDs(ids)
	if err != nil {
		return 0, err
	}
	n, err := q.s.Purge(ctx, keys)
	if err != nil {
		return 0, fmt.Errorf("dead purge: %w", err)
	}
	return n, nil
}

func parseID(id string) ([]byte, error) {
	k, err := ksuid.Parse(id)
	if err != nil {
		return nil, fmt.Errorf("dead batch id %q: %w", id, errs.ErrNotFound)
	}
	return k.Bytes(), nil
}

func parseIDs(ids []string) ([][]byte, error) {
	out := make([][]byte, 0, len(ids))
	for _, id := range ids {
		k, err := parseID(id)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}
