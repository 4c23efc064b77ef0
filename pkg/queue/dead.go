package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/segmentio/ksuid"
)

// MaxBodySnippet bounds DeadInfo.Body as stored.
const MaxBodySnippet = 1024

// DeadInfo is why and how a batch was dead-lettered.
type DeadInfo struct {
	Reason       string    `json:"reason"`                // e.g. "rejected", "budget_spent"
	ErrorClass   string    `json:"error_class,omitempty"` // last error class, e.g. "maybe_sent"
	Status       int       `json:"status,omitempty"`      // last HTTP status, 0 if none
	Attempts     int       `json:"attempts"`
	FirstAttempt time.Time `json:"first_attempt,omitzero"`
	LastAttempt  time.Time `json:"last_attempt,omitzero"`
	Body         []byte    `json:"body,omitempty"` // response body snippet, ≤ MaxBodySnippet
}

// DeadBatch is one dead-letter batch.
type DeadBatch struct {
	ID     string    // KSUID string; pass to DeadGet/DeadReplay/DeadPurge
	At     time.Time // when it was dead-lettered
	Info   DeadInfo
	Count  int      // events
	Bytes  int64    // event bytes
	Events [][]byte // filled by DeadGet only
}

// DeadLetter moves the batch's events, with d, into the dead-letter bucket in
// one transaction. Past DeadMaxBytes the oldest dead batches are dropped.
func (q *Queue) DeadLetter(b *Batch, d DeadInfo) error {
	if b == nil || len(b.keys) == 0 {
		return nil
	}
	if len(d.Body) > MaxBodySnippet {
		d.Body = d.Body[:MaxBodySnippet]
	}
	info, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	if err := q.s.MoveDead(context.Background(), b.keys, info); err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	return nil
}

// DeadList returns every dead batch, oldest first, without events.
func (q *Queue) DeadList() ([]DeadBatch, error) {
	list, err := q.s.DeadList()
	if err != nil {
		return nil, fmt.Errorf("dead list: %w", err)
	}
	out := make([]DeadBatch, 0, len(list))
	for _, d := range list {
		db := DeadBatch{ID: d.ID.String(), At: d.ID.Time(), Count: d.Count, Bytes: d.Bytes}
		_ = json.Unmarshal(d.Info, &db.Info)
		out = append(out, db)
	}
	return out, nil
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
	db := DeadBatch{ID: d.ID.String(), At: d.ID.Time(), Count: d.Count, Bytes: d.Bytes, Events: d.Events}
	_ = json.Unmarshal(d.Info, &db.Info)
	return db, nil
}

// DeadReplay moves dead batches (every one when ids is empty) back to the
// tail of the queue with new keys, oldest batch first and event order kept,
// in one transaction. It returns how many events were re-queued, or errs.ErrQueueFull
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
