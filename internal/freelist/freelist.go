// Package freelist keeps a bounded number of values for reuse: the large buffers and writers
// that serve every request or batch on outbox's hot paths (the agent's request bodies, the
// HTTP destination's body buffers and gzip writers).
//
// Unlike a sync.Pool, a List does not drop its values at a garbage collection: for values of
// hundreds of KiB that every request uses, building them again after each collection costs
// their allocation, their zeroing and more collections. The bound keeps what a burst left
// behind from staying in memory beyond Max values.
package freelist

import "sync"

// List keeps up to a fixed number of values for reuse. It is safe for concurrent use.
type List[T any] struct {
	mu    sync.Mutex
	items []T
	max   int
}

// New returns a List that keeps at most max values.
func New[T any](max int) *List[T] {
	return &List[T]{max: max}
}

// Get returns a kept value, or false when there is none.
func (f *List[T]) Get() (T, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var v T
	if n := len(f.items); n > 0 {
		v = f.items[n-1]
		var zero T
		f.items[n-1] = zero
		f.items = f.items[:n-1]
		return v, true
	}
	return v, false
}

// Put keeps v for a later Get, or drops it when max values are kept already.
func (f *List[T]) Put(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.items) < f.max {
		f.items = append(f.items, v)
	}
}
