package queue_test

import (
	"context"
	"errors"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

func enqueueN(t *testing.T, q *queue.Queue, first, n int) {
	t.Helper()
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = ev(first + i)
	}
	if err := q.Enqueue(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
}

// wantEvents fails unless b holds events first … first+n-1 in order.
func wantEvents(t *testing.T, b *queue.Lease, first, n int) {
	t.Helper()
	if b == nil || b.Len() != n {
		t.Fatalf("batch %v, want %d events from %d", b, n, first)
	}
	for i, e := range b.Events {
		if string(e) != string(ev(first+i)) {
			t.Fatalf("event %d = %s, want %s", i, e, ev(first+i))
		}
	}
}

func TestQueue_LeaseAfter_ChainsBatchesInFIFOOrderUntilNil(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 25)
	b, err := q.Lease(context.Background(), 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, b, 0, 10)
	cases := []struct {
		name     string
		first, n int
		more     bool
	}{
		{"a full batch with events after it reports more", 10, 10, true},
		{"the tail batch is cut by the queue's end, not the limit", 20, 5, false},
	}
	for _, tc := range cases {
		next, more, err := q.LeaseAfter(b, 10, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantEvents(t, next, tc.first, tc.n)
		if more != tc.more {
			t.Errorf("%s: more = %t", tc.name, more)
		}
		b = next
	}
	if next, more, err := q.LeaseAfter(b, 10, 1<<20); next != nil || more || err != nil {
		t.Fatalf("LeaseAfter the last batch = %v, %t, %v; want nil, false, nil", next, more, err)
	}
	if st := q.Stats(); st.Events != 25 {
		t.Fatalf("LeaseAfter removed events: %d left, want 25", st.Events)
	}
}

func TestQueue_LeaseAfter_CutsByBytesLikeLease(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 10)
	size := len(ev(0))
	b, err := q.Lease(context.Background(), 2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	next, more, err := q.LeaseAfter(b, 100, 3*size+1)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, next, 2, 3)
	if !more {
		t.Error("a batch cut by max bytes must report more")
	}
	one, _, err := q.LeaseAfter(next, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, one, 5, 1) // always at least one event
}

func TestQueue_LeaseAfter_IsWhatLeaseReturnsOnceThePreviousBatchIsAcked(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 30)
	b, err := q.Lease(context.Background(), 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := q.LeaseAfter(b, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	head, err := q.Lease(context.Background(), 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, head, 10, 10)
	wantEvents(t, next, 10, 10)
	// Ack and SaveRetry work on a batch from LeaseAfter once it is the head.
	if err := next.Retry(context.Background(), budget.State{Attempts: 2, Retries: 1}); err != nil {
		t.Fatal(err)
	}
	if err := next.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Events != 10 {
		t.Fatalf("%d events left, want 10", st.Events)
	}
}

func TestQueue_LeaseAfter_AfterARestartTheSavedHeadBatchComesFirst(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 30)
	b, err := q.Lease(context.Background(), 12, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	saved := budget.State{Attempts: 3, Retries: 2}
	if err := b.Retry(context.Background(), saved); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})

	head, err := q.Lease(context.Background(), 5, 1<<20) // smaller limits: the saved batch still comes back whole
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, head, 0, 12)
	if st := head.RetryState(); st.Attempts != saved.Attempts || st.Retries != saved.Retries {
		t.Fatalf("head retry state %+v, want %+v", st, saved)
	}
	next, more, err := q.LeaseAfter(head, 5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, next, 12, 5)
	if !more || next.RetryState() != (budget.State{}) {
		t.Fatalf("the batch after the saved head: more %t, retry %+v; want more and a zero state", more, next.RetryState())
	}
}

func TestQueue_LeaseAfter_CarriesTheSavedStateOfTheBatchItReturns(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 20)
	first, err := q.Lease(context.Background(), 4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := first.Split()
	if err := h1.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	saved := budget.State{Attempts: 1}
	if err := h2.Retry(context.Background(), saved); err != nil { // h2 is the head now
		t.Fatal(err)
	}
	// A batch ending just before the saved head: what follows it is the saved batch, whole.
	next, _, err := q.LeaseAfter(h1, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, next, 2, 2)
	if st := next.RetryState(); st.Attempts != 1 {
		t.Fatalf("retry state %+v, want the saved %+v", st, saved)
	}
}

func TestQueue_LeaseAfter_WithoutAPreviousBatchFails(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 3)
	for _, prev := range []*queue.Lease{nil, {}} {
		if _, _, err := q.LeaseAfter(prev, 10, 1<<20); !errors.Is(err, queue.ErrNoBatch) {
			t.Errorf("LeaseAfter(%v) = %v, want ErrNoBatch", prev, err)
		}
	}
}
