package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
)

// manualClock is the queue's Now, set by the test (the writer goroutine reads it).
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// t0 is on a whole second, so that a key's second and the precise time differ visibly.
var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func wantOldest(t *testing.T, q *queue.Queue, want time.Time, what string) {
	t.Helper()
	got, ok := q.Oldest()
	if !ok || got.Sub(want).Abs() > time.Millisecond {
		t.Fatalf("%s: Oldest = %v, %v; want %v (±1ms)", what, got, ok, want)
	}
	if st := q.Stats().Oldest; !st.Equal(got) {
		t.Fatalf("%s: Stats().Oldest = %v, Oldest() = %v; want the same", what, st, got)
	}
}

func leaseOne(t *testing.T, q *queue.Queue) *queue.Lease {
	t.Helper()
	b, err := q.Lease(context.Background(), 1, 1<<20)
	if err != nil || b == nil {
		t.Fatalf("lease: %v, %v", b, err)
	}
	return b
}

func TestQueue_Oldest_IsTheHeadsIntakeTimeToTheMillisecond(t *testing.T) {
	clk := &manualClock{t: ms(853)}
	cfg := queue.Config{Now: clk.Now}
	q, dir := testutil.MustOpenQueue(t, cfg)
	ctx := context.Background()
	enqueueAt := func(at time.Time, events ...[]byte) {
		t.Helper()
		clk.Set(at)
		if err := q.Enqueue(ctx, events...); err != nil {
			t.Fatal(err)
		}
	}
	enqueueAt(ms(853), ev(0))
	wantOldest(t, q, ms(853), "one event enqueued at t0+853ms")
	enqueueAt(ms(1120), ev(1), ev(2)) // one call: one intake time
	enqueueAt(ms(1507), ev(3))
	enqueueAt(ms(1900), ev(4))
	enqueueAt(ms(2250), ev(5))
	wantOldest(t, q, ms(853), "later enqueues leave the head alone")

	if err := leaseOne(t, q).Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantOldest(t, q, ms(1120), "after Ack of the head")
	if err := leaseOne(t, q).Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantOldest(t, q, ms(1120), "after Ack of the first event of a two-event enqueue")

	b1 := leaseOne(t, q)
	b2, _, err := q.LeaseAfter(b1, 1, 1<<20)
	if err != nil || b2 == nil {
		t.Fatalf("lease after: %v, %v", b2, err)
	}
	if err := b2.Ack(context.Background()); err != nil { // out of order: the head stays
		t.Fatal(err)
	}
	if err := b1.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantOldest(t, q, ms(1900), "after the Acks of two batches, out of order")

	// After a restart the precise times are gone: the head reports its key's second, rounded
	// down (never younger than it is), while events enqueued since report theirs again.
	_ = q.Close()
	clk.Set(ms(3000))
	q = testutil.MustOpenQueueAt(t, dir, cfg)
	wantOldest(t, q, ms(1000), "after reopening, an event from before")
	enqueueAt(ms(3333), ev(6))
	for _, want := range []time.Time{ms(2000), ms(3333)} {
		if err := leaseOne(t, q).Ack(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantOldest(t, q, want, "after reopening, acked the head")
	}
}

func TestQueue_Oldest_FollowsDropOldestEviction(t *testing.T) {
	clk := &manualClock{}
	size := int64(len(ev(0)))
	q, _ := testutil.MustOpenQueue(t, queue.Config{Now: clk.Now, MaxBytes: 2 * size, WhenFull: queue.DropOldest})
	for i, at := range []time.Time{ms(101), ms(202), ms(303)} {
		clk.Set(at)
		if err := q.Enqueue(context.Background(), ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	if d := q.Stats().Dropped["drop_oldest"]; d != 1 {
		t.Fatalf("%d dropped, want 1", d)
	}
	wantOldest(t, q, ms(202), "after the head was evicted")
}

func TestQueue_Oldest_ReplayedEventsCarryTheReplayTime(t *testing.T) {
	clk := &manualClock{t: ms(10)}
	q, _ := testutil.MustOpenQueue(t, queue.Config{Now: clk.Now})
	ctx := context.Background()
	if err := q.Enqueue(ctx, ev(0)); err != nil {
		t.Fatal(err)
	}
	if err := leaseOne(t, q).DeadLetter(context.Background(), queue.DeadInfo{Reason: "rejected"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := q.Oldest(); ok {
		t.Fatal("Oldest reports an event after the only one was dead-lettered")
	}
	clk.Set(ms(4321))
	if n, err := q.DeadReplay(ctx); n != 1 || err != nil {
		t.Fatalf("replay: %d, %v", n, err)
	}
	wantOldest(t, q, ms(4321), "a replayed event")
}
