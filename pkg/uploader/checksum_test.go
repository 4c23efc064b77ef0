package uploader_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// A record that fails its checksum at the head of the queue is never uploaded; it is counted
// once as "checksum" and the events behind it are delivered.
func TestUpload_ARecordThatFailsItsChecksumIsDroppedOnceAndTheRestDelivered(t *testing.T) {
	s := sinkOK(t)
	dir := t.TempDir()
	// A manual clock: the worker waits out batch.interval, so the damage lands before any lease.
	c := open(t, testConfig(dir, s.URL()+"/v1/batch"), uploader.WithClock(budgettest.New(time.Time{})))
	enqueue(t, c, 0, 30)
	testutil.FlipOnDisk(t, testutil.DataFile(dir), `"m-0"`)
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if n := s.Deliveries("m-0"); n != 0 {
		t.Errorf("the damaged event was uploaded %d times", n)
	}
	for i := 1; i < 30; i++ {
		if id := "m-" + strconv.Itoa(i); s.Deliveries(id) != 1 {
			t.Fatalf("event %s delivered %d times, want 1", id, s.Deliveries(id))
		}
	}
	st := c.Stats()
	if st.Queue.Dropped["checksum"] != 1 || st.Counters.EventsUploaded != 29 || st.Queue.Events != 0 {
		t.Fatalf("dropped %v, uploaded %d, queued %d; want checksum 1, 29 uploaded, none queued",
			st.Queue.Dropped, st.Counters.EventsUploaded, st.Queue.Events)
	}
}
