package queue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

func TestQueue_DeadLetter_MovesBatchWithInfoAndReplaysAtTail(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		_ = q.Enqueue(ctx, ev(i))
	}
	b, _ := q.Lease(context.Background(), 3, 1<<20)
	at := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	info := queue.DeadInfo{Reason: "rejected", ErrorClass: "status", Status: 400, Attempts: 2,
		FirstAttempt: at, LastAttempt: at.Add(time.Second), Body: bytes.Repeat([]byte("b"), 5000)}
	if err := b.DeadLetter(context.Background(), info); err != nil {
		t.Fatal(err)
	}
	st := q.Stats()
	if st.Events != 3 || st.DeadBatches != 1 || st.DeadEvents != 3 || st.DeadBytes != int64(3*len(ev(0))) {
		t.Fatalf("stats after dead letter: %+v", st)
	}
	_ = q.Close()
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	list, err := q.DeadList()
	if err != nil || len(list) != 1 || list[0].Count != 3 || list[0].Events != nil {
		t.Fatalf("dead list: %+v, %v", list, err)
	}
	d, err := q.DeadGet(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Info.Reason != "rejected" || d.Info.Status != 400 || d.Info.Attempts != 2 || !d.Info.FirstAttempt.Equal(at) ||
		len(d.Info.Body) != queue.MaxBodySnippet || len(d.Events) != 3 || string(d.Events[2]) != string(ev(2)) {
		t.Fatalf("dead get: %+v", d.Info)
	}
	n, err := q.DeadReplay(ctx)
	if err != nil || n != 3 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	got := testutil.DrainAll(t, q)
	want := []int{3, 4, 5, 0, 1, 2}
	for i, w := range want {
		if string(got[i]) != string(ev(w)) {
			t.Fatalf("after replay event %d = %s, want %s", i, got[i], ev(w))
		}
	}
	if st := q.Stats(); st.DeadBatches != 0 || st.DeadEvents != 0 {
		t.Fatalf("dead stats after replay: %+v", st)
	}
}

func TestQueue_DeadPurgeAndUnknownID(t *testing.T) {
	q, _ := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		_ = q.Enqueue(ctx, ev(i))
		b, _ := q.Lease(context.Background(), 1, 1<<20)
		_ = b.DeadLetter(context.Background(), queue.DeadInfo{Reason: "x"})
	}
	list, _ := q.DeadList()
	if n, err := q.DeadPurge(ctx, list[1].ID); n != 1 || err != nil {
		t.Fatalf("purge one: %d %v", n, err)
	}
	if _, err := q.DeadGet(list[1].ID); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("get purged: %v", err)
	}
	if _, err := q.DeadReplay(ctx, list[1].ID); !errors.Is(err, errs.ErrNotFound) {
		t.Fatalf("replay purged: %v", err)
	}
	if n, err := q.DeadPurge(ctx); n != 3 || err != nil {
		t.Fatalf("purge all: %d %v", n, err)
	}
	if st := q.Stats(); st.DeadBatches != 0 || st.DeadBytes != 0 || st.Dropped["purged"] != 4 {
		t.Fatalf("stats after purge: %+v; want no dead batch and the 4 purged events counted as dropped (purged)", st)
	}
}

func TestQueue_DeadMaxBytesDropsOldestDeadBatches(t *testing.T) {
	size := int64(len(ev(0)))
	q, _ := testutil.MustOpenQueue(t, queue.Config{DeadMaxBytes: 5 * size})
	ctx := context.Background()
	for i := 0; i < 9; i++ {
		_ = q.Enqueue(ctx, ev(i))
	}
	for i := 0; i < 3; i++ {
		b, _ := q.Lease(context.Background(), 3, 1<<20)
		_ = b.DeadLetter(context.Background(), queue.DeadInfo{Reason: "x"})
	}
	st := q.Stats()
	if st.DeadBatches != 1 || st.DeadEvents != 3 || st.Dropped["dead_overflow"] != 6 {
		t.Fatalf("stats: %+v; want the newest dead batch kept, 6 events dropped", st)
	}
	list, _ := q.DeadList()
	d, _ := q.DeadGet(list[0].ID)
	if string(d.Events[0]) != string(ev(6)) {
		t.Fatalf("kept dead batch starts with %s", d.Events[0])
	}
}

// A filtered replay through the queue re-queues the matching batch into its source, where a
// lease of part of it that dies again counts the replay; a filtered purge deletes the matches
// only, on a file reopened in between.
func TestQueue_DeadMatching_ReplaysAndPurgesTheMatchesAndCountsReplays(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	ctx := context.Background()
	for i, src := range []string{"a", "b"} {
		if err := q.EnqueueIn(ctx, src, ev(2*i), ev(2*i+1)); err != nil {
			t.Fatal(err)
		}
		b, err := q.Lease(ctx, 10, 1<<20)
		if err != nil || b.Source != src {
			t.Fatalf("lease of %s: %+v, %v", src, b, err)
		}
		if err := b.DeadLetter(ctx, queue.DeadInfo{Reason: queue.DeadRejected, Status: 400 + i, Code: fmt.Sprint(400 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := q.DeadReplayMatching(ctx, queue.DeadFilter{Source: "a"})
	if err != nil || res != (queue.DeadResult{Batches: 1, Events: 2}) {
		t.Fatalf("replay of a's: %+v, %v", res, err)
	}
	_ = q.Close()
	q = testutil.MustOpenQueueAt(t, dir, queue.Config{})
	b, err := q.Lease(ctx, 1, 1<<20)
	if err != nil || b.Source != "a" || string(b.Events[0]) != string(ev(0)) {
		t.Fatalf("lease after the replay: %+v, %v; want a's first event as it was", b, err)
	}
	if err := b.DeadLetter(ctx, queue.DeadInfo{Reason: queue.DeadRejected, Status: 400}); err != nil {
		t.Fatal(err)
	}
	list, err := q.DeadListMatching(queue.DeadFilter{Source: "a"})
	if err != nil || len(list) != 1 || list[0].Info.Replays != 1 || list[0].Count != 1 {
		t.Fatalf("a's dead letters: %+v, %v; want one of 1 event with one replay", list, err)
	}
	res, err = q.DeadPurgeMatching(ctx, queue.DeadFilter{Status: "401"})
	if err != nil || res != (queue.DeadResult{Batches: 1, Events: 2}) {
		t.Fatalf("purge of status 401: %+v, %v", res, err)
	}
	if st := q.Stats(); st.DeadBatches != 1 || st.Events != 1 || st.Dropped["purged"] != 2 {
		t.Fatalf("stats: %+v; want a's dead batch and a's second event left, b's 2 counted purged", st)
	}
}
