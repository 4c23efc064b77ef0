package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_Enqueue_OverMaxBytesIsErrTooLargeUnderEveryPolicy(t *testing.T) {
	size := int64(len(ev(0)))
	big := []byte(`{"type":"track","event":"e","pad":"` + strings.Repeat("x", int(3*size)) + `"}`)
	tests := []struct {
		name   string
		policy queue.WhenFull
		events [][]byte
	}{
		{"reject: one event larger than max_bytes", queue.Reject, [][]byte{big}},
		{"block: never waits for room that cannot come", queue.Block, [][]byte{big}},
		{"drop_oldest: evicts nothing for events that cannot fit", queue.DropOldest, [][]byte{big}},
		{"reject: small events that total more than max_bytes", queue.Reject, [][]byte{ev(7), ev(8), ev(9), ev(10)}},
		{"block: small events that total more than max_bytes", queue.Block, [][]byte{ev(7), ev(8), ev(9), ev(10)}},
		{"drop_oldest: small events that total more than max_bytes", queue.DropOldest, [][]byte{ev(7), ev(8), ev(9), ev(10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 3 * size, WhenFull: tt.policy})
			ctx := context.Background()
			if err := q.Enqueue(ctx, ev(0), ev(1)); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- q.Enqueue(ctx, tt.events...) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second): // a guard against a hang, not a measured timeout
				t.Fatal("Enqueue of events larger than max_bytes did not return")
			}
			if !errors.Is(err, errs.ErrTooLarge) || errors.Is(err, errs.ErrQueueFull) {
				t.Fatalf("Enqueue = %v; want errs.ErrTooLarge, not errs.ErrQueueFull", err)
			}
			if !strings.Contains(err.Error(), "max_bytes") {
				t.Errorf("error %q does not name max_bytes", err)
			}
			st := q.Stats()
			if st.Events != 2 || st.Dropped["drop_oldest"] != 0 {
				t.Fatalf("stats %+v: want the 2 queued events untouched, none dropped", st)
			}
			if got := testutil.DrainAll(t, q); len(got) != 2 || string(got[0]) != string(ev(0)) {
				t.Fatalf("queue holds %q, want events 0 and 1", got)
			}
		})
	}
}

func TestQueue_Enqueue_DropOldestEvictsEverythingForEventsOfExactlyMaxBytes(t *testing.T) {
	size := int64(len(ev(0)))
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 3 * size, WhenFull: queue.DropOldest})
	ctx := context.Background()
	if err := q.Enqueue(ctx, ev(0), ev(1)); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, ev(2), ev(3), ev(4)); err != nil {
		t.Fatalf("Enqueue of exactly max_bytes: %v; want it stored after evicting the queue", err)
	}
	if d := q.Stats().Dropped["drop_oldest"]; d != 2 {
		t.Fatalf("%d dropped, want 2", d)
	}
	got := testutil.DrainAll(t, q)
	if len(got) != 3 || string(got[0]) != string(ev(2)) || string(got[2]) != string(ev(4)) {
		t.Fatalf("queue holds %q, want events 2..4", got)
	}
}

func TestQueue_Enqueue_FullButFittingIsStillErrFull(t *testing.T) {
	size := int64(len(ev(0)))
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: 3 * size})
	ctx := context.Background()
	if err := q.Enqueue(ctx, ev(0), ev(1)); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, ev(2), ev(3)); !errors.Is(err, errs.ErrQueueFull) || errors.Is(err, errs.ErrTooLarge) {
		t.Fatalf("Enqueue into a full queue of events that fit an empty one = %v; want errs.ErrQueueFull (retryable)", err)
	}
}

func TestQueue_DeadReplay_OverMaxBytesIsErrTooLarge(t *testing.T) {
	size := int64(len(ev(0)))
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if err := q.Enqueue(ctx, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := q.Lease(context.Background(), 4, 1<<20)
	if err := b.DeadLetter(context.Background(), queue.DeadInfo{Reason: "rejected"}); err != nil {
		t.Fatal(err)
	}
	_ = q.Close()
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{MaxBytes: 3 * size})
	if _, err := q.DeadReplay(ctx); !errors.Is(err, errs.ErrTooLarge) || errors.Is(err, errs.ErrQueueFull) {
		t.Fatalf("replay of 4 events into max_bytes of 3 = %v; want errs.ErrTooLarge", err)
	}
	if st := q.Stats(); st.Events != 0 || st.DeadEvents != 4 {
		t.Fatalf("stats %+v: want nothing moved", st)
	}
}
