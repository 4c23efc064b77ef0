package uploader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// failFirstAcks fails the first n ack groups before they reach the queue.
func failFirstAcks(n int32) Option {
	var calls atomic.Int32
	return func(o *options) {
		o.ackFault = func() error {
			if calls.Add(1) <= n {
				return errors.New("injected ack failure")
			}
			return nil
		}
	}
}

func TestWorker_FailedAck_SendsTheBatchAgainInOrderAndLosesNothing(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Upload.Endpoint = s.URL() + "/v1/batch"
	cfg.Upload.Gzip = false
	cfg.Queue.Sync = "none"
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = "1" // a limit of one: acks in order
	c, err := openHTTP(cfg, WithClock(budgettest.NewAuto(time.Time{})), failFirstAcks(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Close(ctx) }()
	evs := make([]any, 6)
	for i := range evs {
		evs[i] = fmt.Sprintf(`{"type":"track","event":"e","userId":"u","messageId":"m-%d"}`, i)
	}
	if err := c.Enqueue(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	for { // Flush reports the failed ack while the worker pauses on it; the drain goes on
		err := c.Flush(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the queue never emptied: %v", err)
		}
	}

	reqs := s.Requests()
	first := make(map[string]int) // request index of each messageId's first delivery
	sentFirstBatch := 0
	for i, r := range reqs {
		for _, id := range r.MessageIDs {
			if _, ok := first[id]; !ok {
				first[id] = i
			}
		}
		if slices.Equal(r.MessageIDs, []string{"m-0", "m-1"}) {
			sentFirstBatch++
		}
	}
	for i := range 6 {
		id := fmt.Sprintf("m-%d", i)
		n, ok := first[id]
		if !ok {
			t.Fatalf("%s was never delivered (requests %v)", id, firstIDsOf(reqs))
		}
		if prev := fmt.Sprintf("m-%d", i-1); i > 0 && first[prev] > n {
			t.Errorf("%s first reached the collector before %s", id, prev)
		}
	}
	if sentFirstBatch != 2 {
		t.Errorf("the batch whose ack failed was sent %d times, want 2 (requests %v)", sentFirstBatch, firstIDsOf(reqs))
	}
	// With a limit of one, a batch's slot is held until its ack commits: the batch whose ack
	// failed goes again before the next one, so delivery stays in order.
	if got := firstIDsOf(reqs); len(got) < 2 || got[1] != "[m-0 m-1]" {
		t.Errorf("requests %v; want the batch whose ack failed sent again second", got)
	}
	st := c.Stats()
	if st.Queue.Events != 0 || st.Counters.EventsUploaded != 6 {
		t.Errorf("after the drain: %d queued, %d uploaded; want 0 and 6 (each batch acked once)", st.Queue.Events, st.Counters.EventsUploaded)
	}
}

func firstIDsOf(reqs []sink.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = fmt.Sprint(r.MessageIDs)
	}
	return out
}
