package uploader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// ids renders messageIds m-first … m-(first+n-1).
func ids(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m-%d", first+i)
	}
	return out
}

// firstIDs is the first messageId of each request, in arrival order.
func firstIDs(reqs []sink.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		if len(r.MessageIDs) > 0 {
			out[i] = r.MessageIDs[0]
		}
	}
	return out
}

func TestWorker_Pipelined_DeliversInFIFOOrderUnderAMixOfFailures(t *testing.T) {
	// Six batches of 4; the second is refused once (503), the third rate-limited once, the
	// fifth fails (500) then is too large (413) and goes as two halves.
	s := startScript(t, "ok,503,ok,429:ra=1,ok,ok,500,413,ok,ok,ok")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 4
	cfg.Upload.Concurrency = "1" // strict FIFO
	c := open(t, cfg, uploader.WithClock(autoClock()))
	enqueue(t, c, 0, 24) // one commit: every batch is due at once

	if err := s.WaitEvents(waitCtx(t), 24); err != nil { // Flush would stop at the first retry wait
		t.Fatal(err)
	}
	settle(t, c)
	reqs := s.Requests()
	var accepted []string
	for _, r := range reqs {
		if r.Outcome == sink.OutcomeAccepted {
			accepted = append(accepted, r.MessageIDs...)
		}
	}
	if want := ids(0, 24); !slices.Equal(accepted, want) {
		t.Fatalf("accepted events %v,\nwant each once in intake order %v", accepted, want)
	}
	wantFirst := []string{"m-0", "m-4", "m-4", "m-8", "m-8", "m-12", "m-16", "m-16", "m-16", "m-18", "m-20"}
	if got := firstIDs(reqs); !slices.Equal(got, wantFirst) {
		t.Errorf("requests began with %v,\nwant %v (a batch is retried before the next is sent)", got, wantFirst)
	}
	wantRetry := []string{"-", "-", "1", "-", "1", "-", "-", "1", "-", "-", "-"}
	if got := retryCounts(reqs); !slices.Equal(got, wantRetry) {
		t.Errorf("X-Retry-Count = %v, want %v", got, wantRetry)
	}
	if st := c.Stats(); st.Queue.Events != 0 || st.Counters.EventsUploaded != 24 || st.Counters.BatchesUploaded != 7 {
		t.Errorf("after the drain: %d queued, %d events in %d batches uploaded; want 0, 24 in 7",
			st.Queue.Events, st.Counters.EventsUploaded, st.Counters.BatchesUploaded)
	}
}

func TestWorker_Pipelined_CloseDuringAnInFlightBatchLeavesTheUnsentBatchesOnDisk(t *testing.T) {
	// The first batch is accepted; the second hangs while the third is already leased and
	// encoded beside it.
	s := startScript(t, "ok,hang")
	dir := t.TempDir()
	cfg := testConfig(dir, s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = "1" // one batch in flight, the next prefetched
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	enqueue(t, c, 0, 6)
	if err := s.WaitRequests(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, c, 300*time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := c.Stats(); st.Counters.EventsUploaded != 2 {
		t.Errorf("EventsUploaded = %d after Close, want 2 (the accepted batch's ack settled)", st.Counters.EventsUploaded)
	}

	q, err := queue.Open(dir, queue.Config{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = q.Close() }()
	head, err := q.Lease(context.Background(), 10, 1<<20)
	if err != nil || head == nil {
		t.Fatalf("Lease after Close: %v, %v", head, err)
	}
	if got := eventIDs(t, head.Events); !slices.Equal(got, ids(2, 2)) || head.RetryState().Attempts != 1 {
		t.Errorf("head batch %v with %d attempts; want the cut batch %v, its written attempt counted", got, head.RetryState().Attempts, ids(2, 2))
	}
	next, _, err := q.LeaseAfter(head, 10, 1<<20)
	if err != nil || next == nil {
		t.Fatalf("LeaseAfter: %v, %v", next, err)
	}
	if got := eventIDs(t, next.Events); !slices.Equal(got, ids(4, 2)) {
		t.Errorf("then %v, want the prepared, unsent batch %v", got, ids(4, 2))
	}
	if st := q.Stats(); st.Events != 4 {
		t.Errorf("%d events on disk, want 4 (the accepted batch acked, the rest kept)", st.Events)
	}
}

// eventIDs returns the messageIds of stored events.
func eventIDs(t testing.TB, events [][]byte) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		var v struct {
			MessageID string `json:"messageId"`
		}
		if err := json.Unmarshal(e, &v); err != nil {
			t.Fatalf("stored event %d: %v", i, err)
		}
		out[i] = v.MessageID
	}
	return out
}

func TestWorker_ARetryIsSentWithANewSentAt(t *testing.T) {
	s := startScript(t, "503,ok")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 1
	c := open(t, cfg, uploader.WithClock(autoClock())) // the backoff wait moves the clock
	enqueue(t, c, 0, 1)
	if err := s.WaitEvents(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first, err1 := time.Parse(time.RFC3339, reqs[0].SentAt)
	retry, err2 := time.Parse(time.RFC3339, reqs[1].SentAt)
	if err1 != nil || err2 != nil {
		t.Fatalf("sentAt %q, %q: %v %v", reqs[0].SentAt, reqs[1].SentAt, err1, err2)
	}
	if !retry.After(first) {
		t.Errorf("the retry's sentAt %s is not after the first attempt's %s: the body was not built again", retry, first)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWorker_Pipelined_ADeliveryIsBookedWhenItsAckCommitsNotWhenTheNextAttemptEnds(t *testing.T) {
	// The first batch is accepted; the second hangs (upload.timeout is far away). The first
	// batch's counters, log line and OnDelivered must not wait for the second attempt.
	s := startScript(t, "ok,hang")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Timeout = time.Hour
	delivered := make(chan uploader.BatchInfo, 4)
	var logs syncBuffer
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})),
		uploader.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		uploader.WithHooks(uploader.Hooks{OnDelivered: func(b uploader.BatchInfo) { delivered <- b }}))
	enqueue(t, c, 0, 4) // one commit: both batches are due at once

	ctx := waitCtx(t)
	if err := s.WaitRequests(ctx, 2); err != nil { // the second attempt is in flight
		t.Fatal(err)
	}
	select {
	case b := <-delivered:
		if b.Events != 2 || b.Status != 200 {
			t.Errorf("OnDelivered(%+v), want the first batch: 2 events, status 200", b)
		}
	case <-ctx.Done():
		t.Fatal("OnDelivered did not run while the next batch was in flight")
	}
	st := c.Stats()
	if st.Counters.EventsUploaded != 2 || st.Counters.BatchesUploaded != 1 {
		t.Errorf("during the second attempt: %d events in %d batches uploaded, want 2 in 1 (booked with OnDelivered)",
			st.Counters.EventsUploaded, st.Counters.BatchesUploaded)
	}
	if st.Upload.LastSuccess.IsZero() {
		t.Error("LastSuccess is not set while EventsUploaded is")
	}
	if !strings.Contains(logs.String(), "batch delivered") {
		t.Errorf("no \"batch delivered\" log line while the next batch was in flight; logs:\n%s", logs.String())
	}
	if got := s.Requests(); len(got) != 2 {
		t.Errorf("%d requests, want 2 (the second still in flight)", len(got))
	}
}
