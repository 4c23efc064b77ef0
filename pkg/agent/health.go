package agent

import (
	"sync"
	"sync/atomic"
)

// storeHealth remembers whether the last attempt to persist ingested events failed for a
// reason other than a full queue or shutdown, so that /readyz can report "store failing".
// A later successful enqueue clears it.
type storeHealth struct {
	failing atomic.Bool // fast path for ok()
	mu      sync.Mutex  // guards the fields below
	reason  string
}

// failed records a persistence failure.
func (h *storeHealth) failed(err error) {
	h.mu.Lock()
	h.reason = err.Error()
	h.failing.Store(true)
	h.mu.Unlock()
}

// ok records a successful enqueue.
func (h *storeHealth) ok() {
	if !h.failing.Load() {
		return
	}
	h.mu.Lock()
	h.failing.Store(false)
	h.reason = ""
	h.mu.Unlock()
}

// state returns whether the store is failing and why.
func (h *storeHealth) state() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing.Load(), h.reason
}

// fullState remembers that an enqueue was refused because the queue was full
// (queue.when_full: reject), and the queue's stored bytes at that moment. The queue counts
// as full until its bytes drop below that mark (the worker uploaded something) or an
// enqueue succeeds.
type fullState struct {
	full atomic.Bool
	mark atomic.Int64
}

// set records a refusal with the queue's bytes at the time.
func (f *fullState) set(bytes int64) {
	f.mark.Store(bytes)
	f.full.Store(true)
}

// clear records room in the queue.
func (f *fullState) clear() {
	if f.full.Load() {
		f.full.Store(false)
	}
}

// isFull reports whether the queue still counts as full, given its bytes now.
func (f *fullState) isFull(bytes int64) bool {
	if !f.full.Load() {
		return false
	}
	if bytes < f.mark.Load() {
		f.full.Store(false)
		return false
	}
	return true
}

// unreadyReason returns why intake cannot persist now, or "" when it can.
func (a *Agent) unreadyReason() string {
	if a.isDraining() {
		return "shutting down"
	}
	if failing, reason := a.health.state(); failing {
		return "store failing: " + reason
	}
	if a.full.full.Load() && a.full.isFull(a.client.Stats().Queue.Bytes) {
		return "queue full (queue.max_bytes reached, queue.when_full: reject)"
	}
	return ""
}
