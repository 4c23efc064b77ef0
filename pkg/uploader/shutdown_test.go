package uploader_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/httpdest"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// closeWithin closes c with a ctx of d and fails when Close overruns the deadline by more
// than slack. It returns Close's error.
func closeWithin(t *testing.T, c *uploader.Client, d time.Duration) error {
	t.Helper()
	const slack = 500 * time.Millisecond // generous for -race on a shared 2-core machine
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := c.Close(ctx)
	if took := time.Since(start); took > d+slack {
		t.Errorf("Close took %s with a %s deadline", took, d)
	}
	return err
}

func TestClose_DuringA300sRetryAfterWait_ReturnsAndTheRetryCountContinuesAfterReopen(t *testing.T) {
	s := startScript(t, "429:ra=300:default")
	dir := t.TempDir()
	cfg := testConfig(dir, s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 1 // due at once, no interval wait on the manual clock
	clock := budgettest.New(time.Time{})
	c := open(t, cfg, uploader.WithClock(clock))
	enqueue(t, c, 0, 1)

	// Two rate-limited attempts: the first wait is passed on the fake clock, the second one is
	// in progress when Close comes.
	ctx := waitCtx(t)
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(300 * time.Second)
	if err := s.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var we *uploader.WaitingError
	if err := c.Flush(ctx); !errors.As(err, &we) || we.Path != uploader.PathRateLimit {
		t.Fatalf("Flush during the wait = %v, want a rate_limit *WaitingError", err)
	}
	if err := closeWithin(t, c, 300*time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Fatalf("sink saw %d requests before the restart, want 2", n)
	}

	if err := s.SetScript(sink.Script{}); err != nil { // the collector recovers
		t.Fatal(err)
	}
	c2 := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	if st := c2.Stats(); st.Queue.Events != 1 {
		t.Fatalf("queue after reopen holds %d events, want 1", st.Queue.Events)
	}
	if err := s.WaitEvents(ctx, 1); err != nil {
		t.Fatalf("not delivered after reopen: %v", err)
	}
	if got := retryCounts(s.Requests()); !slices.Equal(got, []string{"-", "1", "2"}) {
		t.Errorf("X-Retry-Count = %v, want [- 1 2] (continuing across the restart)", got)
	}
}

func TestClose_WithTheCollectorHanging_ReturnsWithinTheDeadline(t *testing.T) {
	s := startScript(t, "hang:default")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 1
	cfg.Upload.Timeout = time.Minute
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	enqueue(t, c, 0, 1)
	if err := s.WaitRequests(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := closeWithin(t, c, 200*time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.SetScript(sink.Script{}); err != nil {
		t.Fatal(err)
	}
	c2 := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	if err := s.WaitEvents(waitCtx(t), 1); err != nil {
		t.Fatalf("not delivered after reopen: %v", err)
	}
	// The cut attempt may have reached the collector: the next one is a retry.
	if got := retryCounts(s.Requests()); !slices.Equal(got, []string{"-", "1"}) {
		t.Errorf("X-Retry-Count = %v, want [- 1]", got)
	}
	settle(t, c2)
}

func TestClose_UploadsWhatIsQueuedBeforeReturning(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.Interval = time.Hour
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	enqueue(t, c, 0, 5)
	if err := closeWithin(t, c, 5*time.Second); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := s.Stats().Events; got != 5 {
		t.Errorf("sink accepted %d events, want 5 uploaded by Close", got)
	}
}

func TestFlush_OnAnEmptyQueue_ReturnsAtOnce(t *testing.T) {
	s := sinkOK(t)
	c := open(t, testConfig(t.TempDir(), s.URL()+"/v1/batch"), uploader.WithClock(budgettest.New(time.Time{})))
	if err := c.Flush(context.Background()); err != nil {
		t.Fatalf("Flush = %v, want nil", err)
	}
}

func TestFlush_IgnoresTheBatchInterval(t *testing.T) {
	s := sinkOK(t)
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.Interval = time.Hour
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	enqueue(t, c, 0, 3)
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := s.Stats().Events; got != 3 {
		t.Errorf("sink accepted %d events, want 3", got)
	}
}

func TestFlush_WithTheCollectorDown_ReturnsTheBudgetWait(t *testing.T) {
	cfg := testConfig(t.TempDir(), closedPort(t))
	clock := budgettest.New(time.Time{})
	c := open(t, cfg, uploader.WithClock(clock))
	enqueue(t, c, 0, 1)
	err := c.Flush(waitCtx(t))
	var we *uploader.WaitingError
	if !errors.As(err, &we) {
		t.Fatalf("Flush = %v, want a *WaitingError", err)
	}
	if we.Path != uploader.PathBackoff || !we.Until.After(clock.Now()) || we.Err == nil {
		t.Errorf("WaitingError = %+v, want the backoff path, a future Until and the network error", we)
	}
	st := c.Stats()
	if st.Retry.Path != uploader.PathBackoff || st.Retry.Attempt != 1 || st.Upload.FailingSince.IsZero() || st.Upload.LastResult != "never_sent" {
		t.Errorf("stats = %+v", st)
	}
}

func TestRequestHook_Error_SpendsNoBudgetAndKeepsTheBatch(t *testing.T) {
	s := sinkOK(t)
	hookErr := errors.New("credential unavailable")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})),
		uploader.WithRequestHook(func(*http.Request) error { return hookErr }))
	enqueue(t, c, 0, 1)
	err := c.Flush(waitCtx(t))
	var he *httpdest.HookError
	if !errors.Is(err, hookErr) || !errors.As(err, &he) {
		t.Fatalf("Flush = %v, want the hook's error", err)
	}
	st := c.Stats()
	if n := len(s.Requests()); n != 0 || st.Queue.Events != 1 || st.Retry.Attempt != 0 || st.Retry.Path != uploader.PathNone {
		t.Errorf("after a hook error: %d requests, stats %+v; want none sent, the batch queued, no budget spent", n, st)
	}
}

func TestRequestHook_SeesEachAttemptsHeaders(t *testing.T) {
	s := startScript(t, "500")
	var seen []string
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	c := open(t, cfg, uploader.WithClock(autoClock()), uploader.WithRequestHook(func(r *http.Request) error {
		r.Header.Set("X-Signed", "yes")
		seen = append(seen, r.Header.Get("X-Retry-Count")) // the worker is one goroutine
		return nil
	}))
	enqueue(t, c, 0, 1)
	if err := s.WaitEvents(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	settle(t, c)
	if !slices.Equal(seen, []string{"", "1"}) {
		t.Errorf("hook saw X-Retry-Count %q, want [\"\" 1]", seen)
	}
	for _, r := range s.Requests() {
		if r.Header.Get("X-Signed") != "yes" {
			t.Errorf("request %d lacks the hook's header", r.Seq)
		}
	}
}
