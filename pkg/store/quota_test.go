package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store"
)

func TestStore_Append_OverMaxBytesIsErrTooLargeAndEvictsNothing(t *testing.T) {
	size := int64(len(payload(0)))
	for _, dropOldest := range []bool{false, true} {
		s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Policy: quotaPolicy(3*size, dropOldest)})
		fill(t, s, 2)
		err := s.Append(context.Background(), [][]byte{payload(2), payload(3), payload(4), payload(5)})
		if !errors.Is(err, errs.ErrTooLarge) || errors.Is(err, errs.ErrQueueFull) {
			t.Fatalf("drop oldest %v: Append over max bytes = %v; want errs.ErrTooLarge, not errs.ErrQueueFull", dropOldest, err)
		}
		if st := s.Stats(); st.Events != 2 || st.Dropped[store.ReasonDropOldest] != 0 {
			t.Fatalf("drop oldest %v: stats %+v; want the 2 events kept, none dropped", dropOldest, st)
		}
	}
}

// A too-large request fails alone: requests committed in the same group are stored.
func TestStore_Append_TooLargeFailsOnlyItsOwnRequest(t *testing.T) {
	size := int64(len(payload(0)))
	s := mustOpen(t, t.TempDir(), store.Options{NoSync: true, Policy: quotaPolicy(1000*size, true)})
	huge := make([][]byte, 1001)
	for i := range huge {
		huge[i] = payload(9999)
	}
	var wg sync.WaitGroup
	problems := make([]error, 40)
	for i := range problems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%4 == 0 {
				problems[i] = s.Append(context.Background(), huge)
			} else {
				problems[i] = s.Append(context.Background(), [][]byte{payload(i)})
			}
		}()
	}
	wg.Wait()
	for i, err := range problems {
		if i%4 == 0 && !errors.Is(err, errs.ErrTooLarge) {
			t.Errorf("request %d (too large) = %v, want errs.ErrTooLarge", i, err)
		}
		if i%4 != 0 && err != nil {
			t.Errorf("request %d = %v, want stored", i, err)
		}
	}
	if st := s.Stats(); st.Events != 30 || st.Dropped[store.ReasonDropOldest] != 0 {
		t.Fatalf("stats %+v: want the 30 small events, none dropped", st)
	}
}

// quotaPolicy is the queue's policy for a bound of maxBytes, evicting from the head when
// dropOldest (queue.when_full: drop_oldest), refusing otherwise.
func quotaPolicy(maxBytes int64, dropOldest bool) store.Policy {
	w := queue.Reject
	if dropOldest {
		w = queue.DropOldest
	}
	return queue.Policy(queue.Config{MaxBytes: maxBytes, WhenFull: w})
}
