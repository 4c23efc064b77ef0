package queue

import (
	"context"
	"fmt"

	"github.com/outboxhq/outbox/pkg/store"
)

// ForgetResult is what Forget removed: events from the queue, events from dead batches, and
// the dead batches left empty (deleted).
type ForgetResult = store.ForgetResult

// Forget deletes every queued and dead-lettered event for which match returns true, in one
// transaction (see store.Store.Forget: match runs inside it, once per stored event). Batches
// leased before the call still hold their copies of the events: the consumer must not send
// them (pkg/uploader holds its sends while Forget runs and strips the forgotten events from
// its batches in flight). When it deleted any event it then compacts the file, so that no
// freed page keeps a forgotten event's bytes.
func (q *Queue) Forget(ctx context.Context, match func(event []byte) bool) (ForgetResult, error) {
	res, err := q.s.Forget(ctx, match)
	if err != nil {
		return res, fmt.Errorf("forget: %w", err)
	}
	// bbolt frees the pages of deleted records without overwriting them: a copy of the live
	// data into a fresh file leaves no free page holding a forgotten event.
	if res.Queued+res.Dead > 0 {
		if err := q.s.Compact(ctx); err != nil {
			return res, fmt.Errorf("forget: the events are deleted, but compacting the file failed (run outbox compact): %w", err)
		}
	}
	return res, nil
}

// CountSuppressed counts n events dropped at intake, before they reached the queue, because
// their user is on the suppress list: in Stats.Dropped["suppressed"], to Config.OnDrop and in
// a warn log line.
func (q *Queue) CountSuppressed(n int) { q.s.CountDropped(store.ReasonSuppressed, n) }
