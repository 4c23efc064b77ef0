package uploader

import "sync"

// freeList keeps up to max values for reuse. Unlike a sync.Pool it does not drop them at a
// garbage collection: the encoder's gzip writers (about a megabyte of state each) and body
// buffers serve every batch, and building them again after each collection costs their
// allocation, their zeroing and more collections. It is safe for concurrent use.
type freeList[T any] struct {
	mu    sync.Mutex
	items []T
	max   int
}

// get returns a kept value, or false when there is none.
func (f *freeList[T]) get() (T, bool) {
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

// put keeps v for a later get, or drops it when max values are kept already.
func (f *freeList[T]) put(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.items) < f.max {
		f.items = append(f.items, v)
	}
}
