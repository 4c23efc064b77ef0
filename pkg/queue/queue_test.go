package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

func ev(i int) []byte {
	return []byte(fmt.Sprintf(`{"type":"track","event":"e","messageId":"m%06d"}`, i))
}

func TestQueue_EnqueueLeaseAck_FIFOAcrossRestart(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if err := q.Enqueue(ctx, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := q.Lease(context.Background(), 10, 1<<20)
	if err != nil || b == nil || b.Len() != 10 {
		t.Fatalf("lease: %v %v", b, err)
	}
	for i, e := range b.Events {
		if string(e) != string(ev(i)) {
			t.Fatalf("event %d = %s", i, e)
		}
	}
	if err := b.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	if st := q.Stats(); st.Events != 90 || st.Bytes != int64(90*len(ev(0))) {
		t.Fatalf("stats after restart: %+v", st)
	}
	got := testutil.DrainAll(t, q)
	if len(got) != 90 {
		t.Fatalf("got %d events after restart, want 90", len(got))
	}
	for i, e := range got {
		if string(e) != string(ev(i+10)) {
			t.Fatalf("event %d = %s, want %s", i, e, ev(i+10))
		}
	}
	if b, _ := q.Lease(context.Background(), 10, 100); b != nil {
		t.Fatalf("lease on empty queue returned %d events", b.Len())
	}
}

func TestQueue_Enqueue_GroupCommitsConcurrentProducers(t *testing.T) {
	var commits, events atomic.Int64
	q, _ := testutil.MustOpenQueue(t, queue.Config{OnCommit: func(n int, d time.Duration) {
		commits.Add(1)
		events.Add(int64(n))
	}})
	const producers, each = 32, 50
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := q.Enqueue(context.Background(), ev(p*each+i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := q.Stats()
	if st.Events != producers*each || events.Load() != producers*each {
		t.Fatalf("events: stats %d hook %d, want %d", st.Events, events.Load(), producers*each)
	}
	if st.Commits != commits.Load() {
		t.Fatalf("Stats.Commits %d != hook commits %d", st.Commits, commits.Load())
	}
	if st.Commits*4 > producers*each {
		t.Fatalf("%d commits for %d events: producers were not group-committed", st.Commits, producers*each)
	}
}

func TestQueue_Enqueue_RejectsWhenFull(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: int64(3 * len(ev(0)))})
	ctx := context.Background()
	if err := q.Enqueue(ctx, ev(0), ev(1), ev(2)); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, ev(3)); !errors.Is(err, errs.ErrQueueFull) {
		t.Fatalf("enqueue past max_bytes: %v, want errs.ErrQueueFull", err)
	}
	if st := q.Stats(); st.Events != 3 {
		t.Fatalf("events %d, want 3", st.Events)
	}
}
