package uploader_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

func TestClient_EnqueueFlush_DeliversWithHeaders(t *testing.T) {
	s := sinktest.Start(t, sink.Options{WriteKey: "wk_test"})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	c := open(t, cfg, uploader.WithClock(autoClock()))
	enqueue(t, c, 0, 3)
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	reqs := s.Accepted()
	if len(reqs) != 1 || reqs[0].EventCount != 3 {
		t.Fatalf("accepted %d batches (%+v), want 1 of 3 events", len(reqs), reqs)
	}
	h := reqs[0].Header
	if got := h.Get("Content-Encoding"); got != "gzip" {
		t.Errorf("Content-Encoding = %q, want gzip", got)
	}
	if _, ok := reqs[0].RetryCount(); ok {
		t.Errorf("first attempt carried X-Retry-Count")
	}
	if st := c.Stats(); st.Queue.Events != 0 || st.Counters.EventsUploaded != 3 {
		t.Errorf("stats after flush: %+v", st)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(context.Background()); !errors.Is(err, errs.ErrClosed) {
		t.Errorf("second Close = %v, want errs.ErrClosed", err)
	}
	if err := c.Enqueue(context.Background(), track(9)); !errors.Is(err, errs.ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want errs.ErrClosed", err)
	}
}

func TestClient_Enqueue_OneBadEventStoresNone(t *testing.T) {
	s := sinkOK(t)
	c := open(t, testConfig(t.TempDir(), s.URL()+"/v1/batch"), uploader.WithClock(autoClock()))
	err := c.Enqueue(context.Background(), track(0), map[string]any{"type": "track", "userId": "u"}, track(2))
	var ee *event.Error
	if !errors.As(err, &ee) || ee.Index != 1 {
		t.Fatalf("Enqueue = %v, want an *event.Error for index 1", err)
	}
	if n := c.Stats().Queue.Events; n != 0 {
		t.Errorf("queue holds %d events after a refused Enqueue, want 0", n)
	}
	if err := c.Enqueue(context.Background(), []byte(`{"type":"identify","userId":"u"}`), json.RawMessage(`{"type":"alias","userId":"u","previousId":"p"}`)); err != nil {
		t.Errorf("Enqueue of raw JSON: %v", err)
	}
}

func TestClient_Enqueue_FullQueueReturnsErrQueueFull(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Queue.MaxBytes = 1000 // a few events; the worker waits out batch.interval on a manual clock
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	var err error
	accepted := 0
	for i := 0; i < 100; i++ {
		if err = c.Enqueue(context.Background(), track(i)); err != nil {
			break
		}
		accepted++
	}
	if !errors.Is(err, errs.ErrQueueFull) {
		t.Fatalf("Enqueue into a full queue = %v, want errs.ErrQueueFull", err)
	}
	// Full now is retryable; it must not read as the never-fits error, or callers would drop
	// events that fit once the queue drains.
	if errors.Is(err, errs.ErrTooLarge) {
		t.Errorf("Enqueue into a full queue = %v, which also matches errs.ErrTooLarge", err)
	}
	if !strings.HasPrefix(err.Error(), "uploader: ") {
		t.Errorf("error %q, want it to start with \"uploader: \"", err)
	}
	if accepted == 0 {
		t.Fatalf("the first Enqueue was refused; the test needs a queue that holds a few events")
	}
	if n := c.Stats().Queue.Events; n != int64(accepted) {
		t.Errorf("queue holds %d events after %d accepted calls and one refused, want %d", n, accepted, accepted)
	}
}

func TestOpen_LockedDataDirSaysOpenQueueOnce(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	_, err := segment.Open(cfg)
	if !errors.Is(err, errs.ErrLocked) {
		t.Fatalf("second Open = %v, want an error matching errs.ErrLocked", err)
	}
	msg := err.Error()
	if n := strings.Count(msg, "open queue"); n != 1 {
		t.Errorf("error %q says \"open queue\" %d times, want once", msg, n)
	}
	if !strings.HasPrefix(msg, "uploader: ") || !strings.Contains(msg, "is in use by another outbox process") {
		t.Errorf("error %q, want it to start with \"uploader: \" and say the directory is in use", msg)
	}
}

func TestDropReasons_NameEveryDropReason(t *testing.T) {
	want := []string{"drop_oldest", "dead_overflow", "checksum", "suppressed", "purged", "source_full"} // Stats.Queue.Dropped keys, metric labels
	if got := uploader.DropReasons(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("DropReasons() = %v, want %v", got, want)
	}
}
