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
// its batches in flight).
func (q *Queue) Forget(ctx context.Context, match func(event []byte) bool) (ForgetResult, error) {
	res, err := q.s.Forget(ctx, match)
	if err != nil {
		return res, fmt.Errorf("forget: %w", err)
	}
	return res, nil
}

// CountSuppressed counts n events dropped at intake, before they reached the queue, because
// their user is on the suppress list: in Stats.Dropped["suppressed"], to Config.OnDrop and in
// a warn log line.
func (q *Queue) CountSuppressed(n int) { q.s.CountDropped(store.ReasonSuppressed, n) }
