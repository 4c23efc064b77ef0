package uploader_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// scripted is a destination that answers each Send with the next outcome of its script (then
// success) and keeps the messageIds of the batches it accepted: the contract a destination
// other than HTTP (pkg/kafka) is held to, seen from the worker's side.
type scripted struct {
	mu       sync.Mutex
	script   []delivery.Outcome
	retries  []int    // Batch.Retry of every Send
	accepted [][]byte // events of accepted batches
	closed   bool
}

func (d *scripted) Name() string { return "scripted" }

func (d *scripted) Send(_ context.Context, b delivery.Batch) delivery.Outcome {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retries = append(d.retries, b.Retry)
	o := delivery.Outcome{Class: delivery.ClassSuccess}
	if len(d.script) > 0 {
		o, d.script = d.script[0], d.script[1:]
	}
	if o.Class == delivery.ClassSuccess {
		for _, e := range b.Events {
			d.accepted = append(d.accepted, slices.Clone(e))
		}
	}
	return o
}

func (d *scripted) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

func TestWithDestination_RoutesOutcomesOntoTheBudgetsAndDeadLetters(t *testing.T) {
	tests := []struct {
		name      string
		script    []delivery.Outcome
		wantDead  int    // events dead-lettered
		wantCode  string // the dead letter's code, named in its detail
		wantRetry []int  // Batch.Retry of each Send
	}{
		{name: "a retryable failure with a code is retried with the count, then delivered",
			script:    []delivery.Outcome{{Class: delivery.ClassRetryable, Code: "NOT_LEADER_FOR_PARTITION"}},
			wantRetry: []int{0, 1}},
		{name: "a rate limit with a wait is retried, then delivered",
			script:    []delivery.Outcome{{Class: delivery.ClassRateLimited, RetryAfter: 1e9, Code: "throttled"}},
			wantRetry: []int{0, 1}},
		{name: "too large splits the batch and delivers both halves",
			script:    []delivery.Outcome{{Class: delivery.ClassTooLarge, Code: "MESSAGE_TOO_LARGE"}},
			wantRetry: []int{0, 0, 0}},
		{name: "a rejection without a status dead-letters the batch with the destination's error",
			script: []delivery.Outcome{{Class: delivery.ClassRejected, Code: "TOPIC_AUTHORIZATION_FAILED",
				Err: errors.New("TOPIC_AUTHORIZATION_FAILED: not authorized"), Detail: []byte("TOPIC_AUTHORIZATION_FAILED")}},
			wantDead: 4, wantCode: "TOPIC_AUTHORIZATION_FAILED", wantRetry: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &scripted{script: tt.script}
			cfg := testConfig(t.TempDir(), "http://127.0.0.1:1/unused")
			c := open(t, cfg, uploader.WithDestination(d), uploader.WithClock(autoClock()))
			enqueue(t, c, 0, 4)
			flushThroughWaits(t, c)
			st := c.Stats()
			if st.Upload.Destination != "scripted" {
				t.Errorf("Stats().Upload.Destination = %q, want the destination's name", st.Upload.Destination)
			}
			d.mu.Lock()
			delivered, retries := len(d.accepted), slices.Clone(d.retries)
			d.mu.Unlock()
			if delivered != 4-tt.wantDead || st.Counters.EventsDead != int64(tt.wantDead) {
				t.Errorf("delivered %d, dead %d; want %d and %d", delivered, st.Counters.EventsDead, 4-tt.wantDead, tt.wantDead)
			}
			if !slices.Equal(retries, tt.wantRetry) {
				t.Errorf("Batch.Retry of the sends = %v, want %v", retries, tt.wantRetry)
			}
			if tt.wantDead > 0 {
				list, err := c.DeadLetters().List()
				if err != nil || len(list) != 1 || list[0].Info.Reason != uploader.DeadRejected ||
					list[0].Info.Code != tt.wantCode || !strings.Contains(list[0].Info.Detail, tt.wantCode) {
					t.Fatalf("dead letters = %+v, %v; want one rejected with code %q, its detail naming it", list, err, tt.wantCode)
				}
			}
			if err := c.Close(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if !d.closed {
				t.Error("Close did not close the destination")
			}
		})
	}
}

// flushThroughWaits flushes until the queue is empty: Flush reports a budget wait as a
// *WaitingError, which the auto-advancing clock ends at once.
func flushThroughWaits(t *testing.T, c *uploader.Client) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		err := c.Flush(ctx)
		if err == nil {
			return
		}
		var we *uploader.WaitingError
		if !errors.As(err, &we) || ctx.Err() != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
}

// preparing is a scripted destination that builds each batch's payload ahead (the batch's
// first event, cloned) and checks, at Send, that a prepared payload is the batch's own.
type preparing struct {
	scripted
	prepared, released, sentPrepared, mismatched int
}

func (d *preparing) Prepare(events [][]byte) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.prepared++
	return slices.Clone(events[0])
}

func (d *preparing) Release(payload any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.released++
}

func (d *preparing) Send(ctx context.Context, b delivery.Batch) delivery.Outcome {
	if p, ok := b.Prepared.([]byte); ok {
		d.mu.Lock()
		d.sentPrepared++
		if b.Retry > 0 || !slices.Equal(p, b.Events[0]) {
			d.mismatched++
		}
		d.mu.Unlock()
	}
	return d.scripted.Send(ctx, b)
}

func TestWithDestination_APreparingDestinationGetsItsPayloadOnFirstAttemptsOnly(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir, "http://127.0.0.1:1/unused")
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = "1"
	// Queue 10 events before the destination starts, so each batch is prepared while the one
	// before it is sent.
	held := &scripted{script: []delivery.Outcome{{Class: delivery.ClassRateLimited, RetryAfter: 1 << 62}}}
	c := open(t, cfg, uploader.WithDestination(held))
	enqueue(t, c, 0, 10)
	if err := c.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	d := &preparing{scripted: scripted{script: []delivery.Outcome{{}, {Class: delivery.ClassRetryable}}}}
	d.script[0].Class = delivery.ClassSuccess
	c = open(t, cfg, uploader.WithDestination(d), uploader.WithClock(autoClock()))
	flushThroughWaits(t, c)
	if err := c.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.accepted) != 10 {
		t.Fatalf("accepted %d events, want 10", len(d.accepted))
	}
	if d.sentPrepared == 0 || d.mismatched != 0 {
		t.Errorf("%d sends carried a prepared payload, %d of them another batch's or a retry's; want some, none wrong", d.sentPrepared, d.mismatched)
	}
	if d.prepared != d.sentPrepared+d.released {
		t.Errorf("prepared %d payloads, sent %d and released %d: every payload must be sent or released", d.prepared, d.sentPrepared, d.released)
	}
}
