package queue_test

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
)

// The promise rests on fsync: with queue.sync always every commit that answered an Enqueue
// was fsynced, with none no commit was. SIGKILL keeps the page cache, so the kill -9 tests
// cannot see a missing fsync; this test reads what bbolt was told to do at each commit.
func TestQueue_SyncedCommitsFollowQueueSync(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noSync   bool
		wantSync string
	}{
		{"always fsyncs every commit", false, "always"},
		{"none fsyncs no commit", true, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, dir := testutil.MustOpenQueue(t, queue.Config{NoSync: tc.noSync})
			ctx := context.Background()
			for i := 0; i < 20; i++ {
				if err := q.Enqueue(ctx, ev(i)); err != nil {
					t.Fatal(err)
				}
			}
			b, err := q.Lease(context.Background(), 5, 1<<20)
			if err != nil || b == nil {
				t.Fatalf("lease: %v %v", b, err)
			}
			if err := b.Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				st := q.Stats()
				if st.Sync != tc.wantSync {
					t.Fatalf("%s: Stats.Sync = %q, want %q", when, st.Sync, tc.wantSync)
				}
				want := st.Commits
				if tc.noSync {
					want = 0
				}
				if st.Commits < 2 || st.SyncedCommits != want {
					t.Fatalf("%s: %d synced of %d commits, want %d", when, st.SyncedCommits, st.Commits, want)
				}
			}
			check("first open")
			// A reopen (the path a deploy takes) must keep the setting too.
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			q = testutil.MustOpenQueueAt(t, dir, queue.Config{NoSync: tc.noSync})
			if err := q.Enqueue(ctx, ev(100)); err != nil {
				t.Fatal(err)
			}
			b, err = q.Lease(context.Background(), 100, 1<<20)
			if err != nil || b == nil {
				t.Fatalf("lease: %v %v", b, err)
			}
			if err := b.Ack(context.Background()); err != nil {
				t.Fatal(err)
			}
			check("after reopen")
		})
	}
}
