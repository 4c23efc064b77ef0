package queue

import "github.com/outboxhq/outbox/pkg/store"

// LeaseAfter returns the batch that follows prev, which must be a batch returned by Lease or
// LeaseAfter (or a half of one) that is still queued: the events after prev's last event, cut
// by maxEvents and maxBytes as Lease cuts them. It is what Lease will return once prev has
// left the queue, so that the consumer can read (and encode) the next batch while prev is
// being delivered — including a saved retry state, should it belong to that batch. It does
// not block and removes nothing. more reports that at least one event follows the returned
// batch (so the queue held more than that batch when it was read).
//
// b is nil when nothing follows prev. It is nil with more true when the event after prev
// fails its checksum: Lease, once prev has left the queue, removes that event and goes on.
// A nil or empty prev returns ErrNoBatch.
func (q *Queue) LeaseAfter(prev *Batch, maxEvents, maxBytes int) (b *Batch, more bool, err error) {
	if prev == nil || len(prev.keys) == 0 {
		return nil, false, ErrNoBatch
	}
	sb, more, err := q.s.ReadAfter(prev.keys[len(prev.keys)-1], maxEvents, maxBytes)
	if err != nil || sb == nil {
		return nil, more, err
	}
	return q.batchOf(sb), more, nil
}

// batchOf turns a store batch into a leased Batch, decoding its saved retry state.
func (q *Queue) batchOf(sb *store.Batch) *Batch {
	b := &Batch{Events: sb.Events, Bytes: sb.Bytes, keys: sb.Keys}
	if sb.Retry != nil {
		st, err := decodeRetry(sb.Retry)
		if err != nil {
			q.log.Warn("saved retry state unreadable; starting afresh", "error", err)
		}
		b.Retry = st
	}
	return b
}
