package queue

import (
	"context"

	"github.com/outboxhq/outbox/pkg/store"
)

// Sources: the queue is one FIFO per source in one store (store/sources.go). Intake names the
// source (EnqueueAsyncIn, EnqueueAwaitedIn, EnqueueIn); leases take the sources in turn
// (drr.go), each batch from one source; acks, retry states and dead letters go back to the
// batch's source (Batch.Source).

// DefaultSource is the source of every event enqueued without one.
const DefaultSource = store.DefaultSource

// SourceStats is one source's share of the queue.
type SourceStats = store.SourceStats

// pending returns the sources that hold events after what chain has read of them, but for
// those skip (nil: none) passes over.
func (q *Queue) pending(chain store.Chain, skip func(string) bool) []string {
	var out []string
	for _, st := range q.s.Sources() {
		if chain.Pending(st) && (skip == nil || !skip(st.Name)) {
			out = append(out, st.Name)
		}
	}
	return out
}

// EnqueueIn is Enqueue into source's FIFO ("" is DefaultSource). Past the source's own share
// (Config.SourceMaxBytes) it returns errs.ErrQueueFull, as a full queue does, for that source
// only.
func (q *Queue) EnqueueIn(ctx context.Context, source string, events ...[]byte) error {
	return q.enqueue(ctx, source, events)
}

// SetSourceMaxBytes replaces every source's own share of the queue (Config.SourceMaxBytes) for
// the commits from now on (a reload of sources.<name>.max_bytes). Events already stored stay:
// a source over a share made smaller takes no more until it is back under it.
func (q *Queue) SetSourceMaxBytes(shares map[string]int64) { q.shares.set(shares) }

// EnqueueAsyncIn is EnqueueAsync into source's FIFO ("" is DefaultSource).
func (q *Queue) EnqueueAsyncIn(ctx context.Context, source string, done func(error), events ...[]byte) error {
	return q.enqueueAsync(ctx, source, false, done, events)
}

// EnqueueAwaitedIn is EnqueueAwaited into source's FIFO ("" is DefaultSource).
func (q *Queue) EnqueueAwaitedIn(ctx context.Context, source string, done func(error), events ...[]byte) error {
	return q.enqueueAsync(ctx, source, true, done, events)
}

// SaveSourceRecord stores rec under name in the store's source registry, durable on return
// (store.Store.SaveSourceRecord).
func (q *Queue) SaveSourceRecord(ctx context.Context, name string, rec []byte) error {
	return q.s.SaveSourceRecord(ctx, name, rec)
}
