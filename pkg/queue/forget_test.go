package queue_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_Forget_FreesTheQuotaItTakes(t *testing.T) {
	ctx := context.Background()
	gone := []byte(`{"userId":"gone","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)
	kept := []byte(`{"userId":"kept"}`)
	q, _ := testutil.MustOpenQueue(t, queue.Config{MaxBytes: int64(2*len(gone) + len(kept))})
	if err := q.Enqueue(ctx, gone, kept, gone); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, gone); err == nil {
		t.Fatal("the full queue took another event")
	}
	res, err := q.Forget(ctx, func(ev []byte) bool { return bytes.Contains(ev, []byte(`"gone"`)) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Queued != 2 {
		t.Fatalf("Forget removed %d queued events, want 2", res.Queued)
	}
	if err := q.Enqueue(ctx, kept); err != nil {
		t.Fatalf("the room forget made is not usable: %v", err)
	}
	if got := testutil.DrainAll(t, q); len(got) != 2 || !bytes.Equal(got[0], kept) || !bytes.Equal(got[1], kept) {
		t.Fatalf("left in the queue: %q", got)
	}
}
