package uploader_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// doneLog records every done call of a test's EnqueueAsync calls, by call number.
type doneLog struct {
	mu    sync.Mutex
	calls map[int][]error
	ch    chan int // receives the call number of every done
}

func newDoneLog() *doneLog { return &doneLog{calls: map[int][]error{}, ch: make(chan int, 100_000)} }

// done returns the done func of call i.
func (l *doneLog) done(i int) func(error) {
	return func(err error) {
		l.mu.Lock()
		l.calls[i] = append(l.calls[i], err)
		l.mu.Unlock()
		l.ch <- i
	}
}

// errs returns the errors call i's done was called with.
func (l *doneLog) errs(i int) []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.calls[i]...)
}

// wait waits for the done of call i.
func (l *doneLog) wait(t *testing.T, i int) error {
	t.Helper()
	ctx := waitCtx(t)
	for {
		if e := l.errs(i); len(e) > 0 {
			return e[0]
		}
		select {
		case <-l.ch:
		case <-ctx.Done():
			t.Fatalf("done of call %d not called", i)
		}
	}
}

// wantOnce fails unless calls 0..n-1 each had their done called exactly once, with nil.
func (l *doneLog) wantOnce(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		if e := l.errs(i); len(e) != 1 || e[0] != nil {
			t.Fatalf("call %d: done called with %v, want once with nil", i, e)
		}
	}
}

func TestEnqueueAsync_EveryDoneOnceAfterCommitAndEveryEventDelivered(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Queue.Sync = "always"
	c := open(t, cfg)
	log := newDoneLog()
	const n = 3000
	for i := range n {
		if err := c.EnqueueAsync(context.Background(), log.done(i), track(i)); err != nil {
			t.Fatalf("EnqueueAsync %d: %v", i, err)
		}
	}
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	log.wantOnce(t, n) // Flush waited for every done
	if st := s.Stats(); st.Unique != n {
		t.Fatalf("sink holds %d distinct events, want %d", st.Unique, n)
	}
	st := c.Stats()
	if st.Queue.PendingEvents != 0 || st.Queue.PendingBytes != 0 || st.Counters.EventsEnqueued != n {
		t.Fatalf("stats after Flush: pending %d events %d bytes, enqueued %d; want 0, 0, %d",
			st.Queue.PendingEvents, st.Queue.PendingBytes, st.Counters.EventsEnqueued, n)
	}
}

func TestEnqueueAsync_RefusesAtOnceWithoutCallingDone(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Queue.MaxBytes = 4096
	c := open(t, cfg)
	big := map[string]any{"type": "track", "event": "Big", "userId": "u1", "properties": map[string]any{"pad": string(make([]byte, 3000))}}
	tests := []struct {
		name   string
		events []any
		check  func(error) bool
	}{
		{"bad event is an *event.Error with its index", []any{track(1), map[string]any{"type": "track"}},
			func(err error) bool { var e *event.Error; return errors.As(err, &e) && e.Index == 1 }},
		{"nil event is bad input", []any{nil}, func(err error) bool { var e *event.Error; return errors.As(err, &e) }},
		{"events over queue.max_bytes get errs.ErrTooLarge", []any{big, big},
			func(err error) bool { return errors.Is(err, errs.ErrTooLarge) }},
	}
	var called atomic.Int64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.EnqueueAsync(context.Background(), func(error) { called.Add(1) }, tt.events...)
			if !tt.check(err) {
				t.Fatalf("EnqueueAsync = %v", err)
			}
		})
	}
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := called.Load(); n != 0 {
		t.Fatalf("done called %d times for refused calls", n)
	}
	if st := s.Stats(); st.Events != 0 {
		t.Fatalf("sink got %d events of refused calls", st.Events)
	}
	if err := c.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAsync(context.Background(), func(error) { called.Add(1) }, track(9)); !errors.Is(err, errs.ErrClosed) {
		t.Fatalf("EnqueueAsync after Close = %v, want errs.ErrClosed", err)
	}
	if n := called.Load(); n != 0 {
		t.Fatalf("done called %d times after Close", n)
	}
}

func TestEnqueueAsync_NoEventsAndNilDone(t *testing.T) {
	s := sinkOK(t)
	c := open(t, testConfig(t.TempDir(), s.URL()+"/v1/batch"))
	log := newDoneLog()
	if err := c.EnqueueAsync(context.Background(), log.done(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueAsync(context.Background(), nil, track(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	log.wantOnce(t, 1)
	if st := s.Stats(); st.Unique != 1 {
		t.Fatalf("sink holds %d events, want 1", st.Unique)
	}
}

// hangingSink is a collector whose answers wait until release is called, so that the first
// batch stays in flight and the queue stays as full as the test made it.
func hangingSink(t *testing.T) (s *sink.Server, release func()) {
	gate := make(chan struct{})
	var once sync.Once
	s = sinktest.Start(t, sink.Options{Respond: func(_ sink.Request, r sink.Response) sink.Response {
		<-gate
		return r
	}})
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return s, release
}

// fullQueue opens a client whose queue holds exactly three stored events of track's size,
// enqueues them, and returns the client with its first batch (one event) hanging at s. Its
// queue.max_pending_bytes holds pendingEvents such events (0: the default).
func fullQueue(t *testing.T, s *sink.Server, whenFull string, pendingEvents int64) *uploader.Client {
	t.Helper()
	size := int64(len(mustNormalize(t, 0))) // stored bytes are the normalised event's
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 1
	cfg.Queue.MaxBytes = 3 * size
	cfg.Queue.WhenFull = whenFull
	cfg.Queue.MaxPendingBytes = pendingEvents * size // 0: the default
	c := open(t, cfg)
	for i := range 3 {
		if err := c.EnqueueNormalized(context.Background(), mustNormalize(t, 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// mustNormalize returns track(i) normalised; every such event has the same size below 1000.
func mustNormalize(t *testing.T, i int) []byte {
	t.Helper()
	ev := fmt.Sprintf(`{"type":"track","event":"Tested","userId":"u1","messageId":"m-%04d","timestamp":"2026-01-01T00:00:00.000Z"}`, i)
	n, err := event.Normalize([]byte(ev), "", event.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEnqueueAsync_QuotaErrorUnderRejectComesThroughDone(t *testing.T) {
	s, release := hangingSink(t)
	c := fullQueue(t, s, "reject", 0)
	log := newDoneLog()
	if err := c.EnqueueNormalizedAsync(context.Background(), log.done(0), mustNormalize(t, 1)); err != nil {
		t.Fatalf("EnqueueNormalizedAsync = %v, want nil (the quota applies at commit)", err)
	}
	if err := log.wait(t, 0); !errors.Is(err, errs.ErrQueueFull) {
		t.Fatalf("done(%v), want errs.ErrQueueFull", err)
	}
	release()
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if e := log.errs(0); len(e) != 1 {
		t.Fatalf("done called %d times", len(e))
	}
	if st := s.Stats(); st.Unique != 3 {
		t.Fatalf("sink holds %d events, want the 3 that fitted", st.Unique)
	}
}

func TestEnqueueAsync_WaitsForRoomPastMaxPendingBytes(t *testing.T) {
	s, release := hangingSink(t)
	// Under block, an event that finds the queue full stays pending; the pending bound is one
	// event, so the next call has to wait.
	c := fullQueue(t, s, "block", 1)
	log := newDoneLog()
	ctx := context.Background()
	if err := c.EnqueueNormalizedAsync(ctx, log.done(0), mustNormalize(t, 0)); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Queue.PendingEvents != 1 || st.Queue.PendingBytes == 0 {
		t.Fatalf("pending %d events, %d bytes; want 1 event", st.Queue.PendingEvents, st.Queue.PendingBytes)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.EnqueueNormalizedAsync(cancelled, log.done(1), mustNormalize(t, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("EnqueueNormalizedAsync past the bound = %v, want it to wait (context.Canceled)", err)
	}
	returned := make(chan error, 1)
	go func() { returned <- c.EnqueueNormalizedAsync(ctx, log.done(2), mustNormalize(t, 2)) }()
	release() // the collector answers: acks free room, the pending event commits, the waiter gets in
	if err := <-returned; err != nil {
		t.Fatalf("waiting EnqueueNormalizedAsync = %v", err)
	}
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if e := log.errs(i); len(e) != 1 || e[0] != nil {
			t.Fatalf("call %d: done %v, want once with nil", i, e)
		}
	}
	if e := log.errs(1); len(e) != 0 {
		t.Fatalf("refused call's done called: %v", e)
	}
	if st := s.Stats(); st.Unique != 5 {
		t.Fatalf("sink holds %d events, want 5", st.Unique)
	}
}

func TestClose_WaitsForPendingEventsAndCommitsThem(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Queue.Sync = "always"
	c := open(t, cfg)
	log := newDoneLog()
	const n = 2000
	for i := range n {
		if err := c.EnqueueAsync(context.Background(), log.done(i), track(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	log.wantOnce(t, n) // before Close returned
	if st := s.Stats(); st.Unique != n {
		t.Fatalf("sink holds %d events, want %d", st.Unique, n)
	}
}

func TestClose_PastItsDeadlineAnswersStuckPendingEventsWithErrClosed(t *testing.T) {
	s, _ := hangingSink(t)
	c := fullQueue(t, s, "block", 0)
	log := newDoneLog()
	if err := c.EnqueueNormalizedAsync(context.Background(), log.done(0), mustNormalize(t, 0)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no time left: the event waiting for room cannot commit
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if e := log.errs(0); len(e) != 1 || !errors.Is(e[0], errs.ErrClosed) {
		t.Fatalf("done %v when Close returned, want once with errs.ErrClosed", e)
	}
}
