package queue_test

import (
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_AckAll_DeletesSeveralBatchesInOneCommit(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	enqueueN(t, q, 0, 30)
	b1, err := q.Lease(10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SaveRetry(b1, queue.RetryState{Attempts: 2}); err != nil {
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
	if head.Retry != (queue.RetryState{}) {
		t.Fatalf("the acked head's retry state came back on %+v", head.Retry)
	}
}
