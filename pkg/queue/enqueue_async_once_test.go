package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

// Every EnqueueAsync call returns an error or has its done called, exactly once: a ctx that
// ended races the hand-off (either may win), a closed queue and an oversized call return.
func TestEnqueueAsync_ExactlyOneOfErrorOrDone(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 1 << 20})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var mu sync.Mutex
	dones := map[int]int{}
	done := func(i int) func(error) {
		return func(error) { mu.Lock(); dones[i]++; mu.Unlock() }
	}
	var returned []error
	for i := range 200 {
		returned = append(returned, q.EnqueueAsync(cancelled, done(i), ev(i)))
	}
	tooLarge := q.EnqueueAsync(context.Background(), done(len(returned)), make([]byte, 2<<20))
	if !errors.Is(tooLarge, errs.ErrTooLarge) {
		t.Fatalf("oversized call = %v, want errs.ErrTooLarge", tooLarge)
	}
	returned = append(returned, tooLarge)
	if err := q.Close(); err != nil { // answers every call handed over
		t.Fatal(err)
	}
	closed := q.EnqueueAsync(context.Background(), done(len(returned)), ev(0))
	if !errors.Is(closed, errs.ErrClosed) {
		t.Fatalf("call after Close = %v, want errs.ErrClosed", closed)
	}
	returned = append(returned, closed)
	mu.Lock()
	defer mu.Unlock()
	for i, err := range returned {
		if n := dones[i]; (err != nil && n != 0) || (err == nil && n != 1) {
			t.Fatalf("call %d returned %v and its done was called %d times", i, err, n)
		}
	}
}
