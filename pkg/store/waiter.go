package store

import (
	"context"
	"sync"
)

// waiter turns an asynchronous append's callback into a wait (Append over AppendAwaited).
// Its channel holds one answer, so the writer never blocks on a caller that has gone
// (ctx ended): such a waiter is simply not reused.
type waiter struct {
	ch chan error
	fn func(error)
}

var waiters = sync.Pool{New: func() any {
	w := &waiter{ch: make(chan error, 1)}
	w.fn = func(err error) { w.ch <- err }
	return w
}}

func getWaiter() *waiter { return waiters.Get().(*waiter) }

// putWaiter recycles a waiter whose callback has not been handed over, or has been answered
// and read.
func putWaiter(w *waiter) { waiters.Put(w) }

// wait returns the append's answer, or ctx's error when ctx ends first (the answer then
// arrives later into the abandoned waiter).
func (w *waiter) wait(ctx context.Context) error {
	select {
	case err := <-w.ch:
		putWaiter(w)
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
