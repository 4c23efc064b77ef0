package queue_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store"
)

// The queue never leases a record that fails its checksum: it is counted once as "checksum"
// and the events behind it are leased in order.
func TestLease_NeverReturnsAHeadRecordThatFailsItsChecksum(t *testing.T) {
	q, dir := testutil.MustOpenQueue(t, queue.Config{})
	for i := 0; i < 30; i++ {
		if err := q.Enqueue(t.Context(), ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	testutil.FlipOnDisk(t, filepath.Join(dir, store.FileName), `"m000000"`)
	got := testutil.DrainAll(t, q)
	if len(got) != 29 {
		t.Fatalf("leased %d events, want the 29 intact ones", len(got))
	}
	for i, e := range got {
		if !bytes.Equal(e, ev(i+1)) {
			t.Fatalf("event %d = %s, want %s", i, e, ev(i+1))
		}
	}
	if st := q.Stats(); st.Dropped["checksum"] != 1 || st.Events != 0 {
		t.Fatalf("dropped %v with %d queued; want checksum 1, queue empty", st.Dropped, st.Events)
	}
}
