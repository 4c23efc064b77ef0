package queue_test

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_AckAll_DeletesSeveralBatchesInOneCommit(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 30)
	b1, err := q.Lease(10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SaveRetry(b1, budget.State{Attempts: 2}); err != nil {
		t.Fatal(err)
	}
	b2, _, err := q.LeaseAfter(b1, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	commits := q.Stats().Commits
	if err := q.AckAll(b1, nil, b2); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	if st.Events != 10 || st.Commits != commits+1 {
		t.Fatalf("after AckAll: %d events, %d commits; want 10 events and one more commit than %d", st.Events, st.Commits, commits)
	}
	if err := q.AckAll(); err != nil {
		t.Fatalf("AckAll of nothing: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	head, err := q.Lease(10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, head, 20, 10)
	if head.Retry != (budget.State{}) {
		t.Fatalf("the acked head's retry state came back on %+v", head.Retry)
	}
}

// wantQueue fails unless the queue holds exactly the events numbered want, in order, and its
// counters agree; it drains the queue.
func wantQueue(t *testing.T, q *queue.Queue, want []int) {
	t.Helper()
	var size int64
	for _, w := range want {
		size += int64(len(ev(w)))
	}
	if st := q.Stats(); st.Events != int64(len(want)) || st.Bytes != size {
		t.Fatalf("Stats: %d events, %d bytes; want %d, %d", st.Events, st.Bytes, len(want), size)
	}
	got := testutil.DrainAll(t, q)
	if len(got) != len(want) {
		t.Fatalf("queue holds %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		if string(got[i]) != string(ev(w)) {
			t.Fatalf("event %d = %s, want %s", i, got[i], ev(w))
		}
	}
	if st := q.Stats(); st.Events != 0 || st.Bytes != 0 {
		t.Fatalf("Stats after draining: %d events, %d bytes", st.Events, st.Bytes)
	}
}

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

func TestQueue_AckAll_DeletesExactlyTheKeysOfItsBatchesAndKeepsCountsExact(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 500)
	var batches []*queue.Batch
	b, err := q.Lease(100, 1<<20)
	for i := 0; i < 3 && err == nil; i++ {
		batches = append(batches, b)
		b, _, err = q.LeaseAfter(b, 100, 1<<20)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := q.AckAll(batches...); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	wantQueue(t, q, seq(300, 500))
}

func TestQueue_AckAll_OfBatchesNotAtTheHeadDeletesOnlyThem(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 30)
	dead, err := q.Lease(10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.DeadLetter(dead, queue.DeadInfo{Reason: "rejected"}); err != nil {
		t.Fatal(err)
	}
	if n, err := q.DeadReplay(context.Background()); err != nil || n != 10 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	// The queue is now 10…29 followed by the replayed 0…9 under new keys.
	b1, err := q.Lease(10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b2, _, err := q.LeaseAfter(b1, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b3, _, err := q.LeaseAfter(b2, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents(t, b3, 0, 10)
	first, second := b1.Split()
	// The second half of the head batch (15…19) and the replayed batch: two runs with b2
	// (20…29) between them, neither at the head. The dead-lettered batch's old keys are gone
	// and must delete nothing.
	if err := q.AckAll(second, b3, dead); err != nil {
		t.Fatal(err)
	}
	if err := q.AckAll(first); err != nil {
		t.Fatal(err)
	}
	wantQueue(t, q, seq(20, 30))
}
