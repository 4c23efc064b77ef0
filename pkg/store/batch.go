package store

// Batch is a run of events from the head of the queue (Head) or after a batch (ReadAfter),
// copied out of bbolt: the one batch type from the store to the destination (pkg/queue's
// Lease wraps it with what settles it). It holds no reference into bbolt's memory map.
type Batch struct {
	Events [][]byte // stored bytes, ascending by key, owned by the caller
	Bytes  int      // sum of len(Events)
	// Retry is the retry state saved for this batch (SaveRetry) before a restart, as the
	// caller encoded it (pkg/queue decodes it); nil when none.
	Retry []byte
	// Source is the name of the source every event of the batch belongs to: a batch never
	// mixes sources.
	Source string
	// Chain is how far the chain of reads that ends with this batch has read each source
	// (pkg/queue sets it; LeaseAfter reads after it).
	Chain Chain

	keys   [][]byte // event keys, parallel to Events; held apart from the block
	events *[]byte  // the block Events are slices of (pooled, see Release); nil for a half
}

// Keys returns the batch's event keys, ascending, parallel to Events: what Delete, MoveDead,
// SaveRetry and ReadAfter take. They stay valid after Release. The caller must not modify them.
func (b *Batch) Keys() [][]byte { return b.keys }

// Len returns the number of events.
func (b *Batch) Len() int { return len(b.Events) }

// Release hands the block that holds the batch's Events back to the store, for the events of
// a later read: a consumer that reads batch after batch then reuses a few blocks instead of
// allocating (and faulting in) fresh memory for every batch. Call it at most once, when
// nothing refers to Events any more (nor to those of its halves, which share the block); the
// batch can still be acknowledged, dead-lettered or read after, which use only its keys. Not
// calling it is never wrong: the garbage collector reclaims the block. On a half of a split
// batch it does nothing.
func (b *Batch) Release() {
	if b == nil || b.events == nil {
		return
	}
	p := b.events
	b.events, b.Events = nil, nil
	putBlock(p)
}

// Split returns the two halves of b, each a new batch with a zero retry state whose Events
// share b's block (b's Release hands it back; theirs do nothing). A batch of fewer than two
// events cannot be split: Split returns b itself and nil.
func (b *Batch) Split() (*Batch, *Batch) {
	if len(b.Events) < 2 {
		return b, nil
	}
	m := len(b.Events) / 2
	half := func(ev, keys [][]byte) *Batch {
		h := &Batch{Events: ev, keys: keys, Source: b.Source, Chain: b.Chain.With(b.Source, keys[len(keys)-1])}
		for _, e := range ev {
			h.Bytes += len(e)
		}
		return h
	}
	return half(b.Events[:m:m], b.keys[:m:m]), half(b.Events[m:], b.keys[m:])
}
