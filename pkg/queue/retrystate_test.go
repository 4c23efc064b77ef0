package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store"
)

// The queue owns the encoding of a retry state; the store keeps the bytes. A state saved by an
// older build (the store decoded it then) reads back the same, and one that cannot be read
// leaves the batch whole (its saved event count) with a zero state, rather than stuck.
func TestRetryState_DecodesWhatWasSaved_AnUnreadableOneStartsAfresh(t *testing.T) {
	tests := []struct {
		name  string
		saved string
		want  budget.State
	}{
		{"the JSON an older build wrote", `{"a":3,"r":2,"b":1700000000000000000}`,
			budget.State{Attempts: 3, Retries: 2, BackoffStart: time.Unix(0, 1700000000000000000)}},
		{"a rate-limit start", `{"a":1,"r":0,"l":1700000000500000000}`,
			budget.State{Attempts: 1, RateLimitStart: time.Unix(0, 1700000000500000000)}},
		{"not JSON", "not json", budget.State{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			s, err := store.Open(dir, store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, [][]byte{[]byte(`{"n":0}`), []byte(`{"n":1}`), []byte(`{"n":2}`)}); err != nil {
				t.Fatal(err)
			}
			all, err := s.Head(ctx, 100, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SaveRetry(ctx, all.Keys()[0], 2, []byte(tt.saved)); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			q := testutil.MustOpenQueueAt(t, dir, queue.Config{})
			b, err := q.Lease(ctx, 100, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			st := b.RetryState()
			if b.Len() != 2 || st.Attempts != tt.want.Attempts || st.Retries != tt.want.Retries ||
				!st.BackoffStart.Equal(tt.want.BackoffStart) || !st.RateLimitStart.Equal(tt.want.RateLimitStart) {
				t.Fatalf("lease of %d events with state %+v; want the saved 2 with %+v", b.Len(), st, tt.want)
			}
		})
	}
}
