package queue_test

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_Pending_MatchesStatsEventsBytesAndOldest(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	check := func(when string) {
		t.Helper()
		events, bytes, oldest := q.Pending()
		st := q.Stats()
		if events != st.Events || bytes != st.Bytes || !oldest.Equal(st.Oldest) {
			t.Fatalf("%s: Pending = %d, %d, %v; Stats = %d, %d, %v", when, events, bytes, oldest, st.Events, st.Bytes, st.Oldest)
		}
	}
	check("empty")
	if events, _, oldest := q.Pending(); events != 0 || !oldest.IsZero() {
		t.Fatalf("empty queue: Pending = %d events, oldest %v; want 0 and the zero time", events, oldest)
	}
	if err := q.Enqueue(context.Background(), ev(0), ev(1)); err != nil {
		t.Fatal(err)
	}
	check("after enqueue")
	if events, bytes, oldest := q.Pending(); events != 2 || bytes != int64(len(ev(0))+len(ev(1))) || oldest.IsZero() {
		t.Fatalf("Pending = %d, %d, %v; want 2 events of their bytes and an intake time", events, bytes, oldest)
	}
	b, err := q.Lease(context.Background(), 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after ack")
}
