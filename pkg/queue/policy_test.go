package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_Enqueue_BlockWaitsForRoomOrCtx(t *testing.T) {
	size := int64(len(ev(0)))
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 2 * size, WhenFull: queue.Block})
	bg := context.Background()
	if err := q.Enqueue(bg, ev(0), ev(1)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := q.Enqueue(ctx, ev(2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("blocked enqueue with a done ctx: %v, want context.Canceled", err)
	}

	done := make(chan error, 1)
	go func() { done <- q.Enqueue(bg, ev(2)) }()
	select {
	case err := <-done:
		t.Fatalf("enqueue into a full queue returned %v before room was made", err)
	default:
	}
	b, _ := q.Lease(context.Background(), 1, 1<<20)
	if err := b.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("blocked enqueue after room was made: %v", err)
	}
	got := testutil.DrainAll(t, q)
	if len(got) != 2 || string(got[1]) != string(ev(2)) {
		t.Fatalf("queue holds %q", got)
	}
	if err := q.Enqueue(bg, ev(3), ev(4), ev(5)); !errors.Is(err, errs.ErrTooLarge) {
		t.Fatalf("enqueue larger than max_bytes under block: %v, want errs.ErrTooLarge at once", err)
	}
}

func TestQueue_Enqueue_DropOldestEvictsHeadAndCounts(t *testing.T) {
	size := int64(len(ev(0)))
	var hook atomic.Int64
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 3 * size, WhenFull: queue.DropOldest,
		OnDrop: func(reason string, n int) {
			if reason == "drop_oldest" {
				hook.Add(int64(n))
			}
		}})
	for i := 0; i < 5; i++ {
		if err := q.Enqueue(context.Background(), ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	st := q.Stats()
	if st.Dropped["drop_oldest"] != 2 || hook.Load() != 2 || st.Events != 3 {
		t.Fatalf("stats %+v, hook %d: want 2 dropped, 3 queued", st, hook.Load())
	}
	got := testutil.DrainAll(t, q)
	if len(got) != 3 || string(got[0]) != string(ev(2)) {
		t.Fatalf("queue holds %q, want events 2..4", got)
	}
}

func TestQueue_Lease_RespectsLimitsButReturnsAtLeastOne(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	for i := 0; i < 10; i++ {
		_ = q.Enqueue(context.Background(), ev(i))
	}
	size := len(ev(0))
	tests := []struct {
		name                string
		maxEvents, maxBytes int
		want                int
	}{
		{"max events bounds the batch", 4, 1 << 20, 4},
		{"max bytes bounds the batch", 100, 3*size + 1, 3},
		{"one event over max bytes still comes out", 100, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := q.Lease(context.Background(), tt.maxEvents, tt.maxBytes)
			if err != nil || b.Len() != tt.want || b.Bytes != tt.want*size || string(b.Events[0]) != string(ev(0)) {
				t.Fatalf("lease(%d, %d) = %d events (%v), want %d from the head", tt.maxEvents, tt.maxBytes, b.Len(), err, tt.want)
			}
		})
	}
}

func TestQueue_SaveRetry_RestoresSameHeadBatchAfterRestart(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	for i := 0; i < 10; i++ {
		_ = q.Enqueue(context.Background(), ev(i))
	}
	b, _ := q.Lease(context.Background(), 4, 1<<20)
	start := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	st := budget.State{Attempts: 3, Retries: 2, BackoffStart: start}
	if err := b.Retry(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	_ = q.Close()
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	b, _ = q.Lease(context.Background(), 100, 1<<20)
	if got := b.RetryState(); b.Len() != 4 || got.Attempts != 3 || got.Retries != 2 || !got.BackoffStart.Equal(start) || !got.RateLimitStart.IsZero() {
		t.Fatalf("restored lease: %d events, retry %+v; want the saved 4-event batch with its state", b.Len(), got)
	}
	l, r := b.Split()
	if l.Len() != 2 || r.Len() != 2 || l.RetryState() != (budget.State{}) || r.RetryState() != (budget.State{}) {
		t.Fatalf("split: %d/%d, retry %+v %+v", l.Len(), r.Len(), l.RetryState(), r.RetryState())
	}
	if err := l.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ = q.Lease(context.Background(), 100, 1<<20)
	if b.Len() != 8 || b.RetryState() != (budget.State{}) || string(b.Events[0]) != string(ev(2)) {
		t.Fatalf("after acking the left half: %d events, retry %+v", b.Len(), b.RetryState())
	}
	if err := b.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = q.Close()
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	if b, _ := q.Lease(context.Background(), 100, 1<<20); b != nil {
		t.Fatalf("acked events came back: %d", b.Len())
	}
}

func TestQueue_NotifyAndOldestFollowIntake(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	q, _ := testutil.MustOpenQueue(t, queue.Config{Now: func() time.Time { return now }})
	if _, ok := q.Oldest(); ok {
		t.Fatal("Oldest on an empty queue reported an event")
	}
	select {
	case <-q.Notify():
		t.Fatal("notified before any event")
	default:
	}
	_ = q.Enqueue(context.Background(), ev(0))
	now = now.Add(time.Minute)
	_ = q.Enqueue(context.Background(), ev(1))
	select {
	case <-q.Notify():
	default:
		t.Fatal("no wake-up after enqueue")
	}
	if o, ok := q.Oldest(); !ok || !o.Equal(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("Oldest = %v, %v", o, ok)
	}
	b, _ := q.Lease(context.Background(), 1, 1<<20)
	_ = b.Ack(context.Background())
	if o, _ := q.Oldest(); !o.Equal(now) || !q.Stats().Oldest.Equal(now) {
		t.Fatalf("Oldest after acking the head = %v, want %v", o, now)
	}
}
