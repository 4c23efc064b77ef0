package queue

import (
	"encoding/json"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/store"
)

// Batch is a leased run of events from the head of the queue.
type Batch struct {
	Events [][]byte     // stored bytes, owned by the caller
	Bytes  int          // sum of len(Events)
	Retry  budget.State // the state saved for this batch before a restart (SaveRetry), else zero
	keys   [][]byte
	read   *store.Batch // what the store read; nil for a half of a split batch
}

// Release hands the memory that holds the batch's Events back for the events of a later
// lease. Call it once nothing refers to Events any more (nor to those of its halves, which
// share it); the batch can still be acknowledged, dead-lettered or passed to LeaseAfter, which
// use only its keys. Not calling it is never wrong. On a half of a split batch it does nothing.
func (b *Batch) Release() {
	if b == nil || b.read == nil {
		return
	}
	b.read.Release()
	b.read, b.Events = nil, nil
}

// Len returns the number of events.
func (b *Batch) Len() int { return len(b.Events) }

// Split returns the two halves of b, each a new batch with a zero
// retry state. A batch of fewer than two events cannot be split: Split
// returns b itself and nil.
func (b *Batch) Split() (*Batch, *Batch) {
	if len(b.Events) < 2 {
		return b, nil
	}
	m := len(b.Events) / 2
	half := func(ev, keys [][]byte) *Batch {
		h := &Batch{Events: ev, keys: keys}
		for _, e := range ev {
			h.Bytes += len(e)
		}
		return h
	}
	return half(b.Events[:m:m], b.keys[:m:m]), half(b.Events[m:], b.keys[m:])
}

type retryJSON struct {
	Attempts       int   `json:"a"`
	Retries        int   `json:"r"`
	BackoffStart   int64 `json:"b,omitempty"` // unix ns
	RateLimitStart int64 `json:"l,omitempty"` // unix ns
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func encodeRetry(st budget.State) []byte {
	b, _ := json.Marshal(retryJSON{st.Attempts, st.Retries, unixNano(st.BackoffStart), unixNano(st.RateLimitStart)})
	return b
}

func decodeRetry(b []byte) (budget.State, error) {
	var j retryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return budget.State{}, err
	}
	return budget.State{Attempts: j.Attempts, Retries: j.Retries, BackoffStart: fromUnixNano(j.BackoffStart), RateLimitStart: fromUnixNano(j.RateLimitStart)}, nil
}
