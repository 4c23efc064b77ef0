package uploader_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// twoSources opens a client with sources a (key wk-a) and b (key wk-b) posting to endpoint
// (b to bEndpoint when set), batches of two events, upload.concurrency conc, on clock.
func twoSources(t *testing.T, endpoint, bEndpoint, conc string, clock *budgettest.Clock) (*uploader.Client, *uploader.Source, *uploader.Source) {
	t.Helper()
	cfg := testConfig(t.TempDir(), endpoint)
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = conc
	cfg.Sources.Named = map[string]*uploader.SourceConfig{
		"a": {UploadWriteKey: "wk-a"},
		"b": {UploadWriteKey: "wk-b", Endpoint: bEndpoint},
	}
	c := open(t, cfg, uploader.WithClock(clock))
	a, err := c.Source("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Source("b")
	if err != nil {
		t.Fatal(err)
	}
	return c, a, b
}

// enqueueIn stores n events of src numbered from first, in one call (whole batches).
func enqueueIn(t *testing.T, s *uploader.Source, first, n int) {
	t.Helper()
	evs := make([]any, n)
	for i := range evs {
		evs[i] = sourceEvent(s.Name(), first+i)
	}
	if err := s.Enqueue(waitCtx(t), evs...); err != nil {
		t.Fatal(err)
	}
}

// rowOf is the Stats row of source name.
func rowOf(t *testing.T, c *uploader.Client, name string) uploader.SourceStats {
	t.Helper()
	r, ok := sourceRow(c, name)
	if !ok {
		t.Fatalf("no Stats row for source %s", name)
	}
	return r
}

// waitRow waits until source name's Stats row satisfies cond (its batches' acks follow the
// collector's answers), and returns it.
func waitRow(t *testing.T, c *uploader.Client, name string, cond func(uploader.SourceStats) bool) uploader.SourceStats {
	t.Helper()
	ctx := waitCtx(t)
	for {
		r := rowOf(t, c, name)
		if cond(r) {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("source %s's row %+v never got there", name, r)
		}
		time.Sleep(time.Millisecond)
	}
}

func delivered(r uploader.SourceStats) bool { return r.Events == 0 && r.InFlight == 0 }

// requestsWithKey counts the requests the collector saw with key.
func requestsWithKey(t *testing.T, s *sink.Server, key string) int {
	n := 0
	for _, r := range s.Requests() {
		if keyOf(t, r) == key {
			n++
		}
	}
	return n
}

// The collector answers 429 Retry-After: 30 to one write key only: the other source's events
// arrive while the held one waits (the clock never reaches the end of the hold), in every
// mode, and its own events go once the hold has passed.
func TestClient_Sources_ARetryAfterHoldsOnlyItsSource(t *testing.T) {
	for _, conc := range []string{"1", "4", uploader.DefaultConcurrency} {
		t.Run("concurrency "+conc, func(t *testing.T) {
			var limited atomic.Bool
			limited.Store(true)
			col := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
				if limited.Load() && keyOf(t, r) == "wk-a" {
					return sink.Response{Status: 429, RetryAfter: "30"}
				}
				return scripted
			}})
			clock := budgettest.New(time.Time{})
			c, a, b := twoSources(t, col.URL()+"/v1/batch", "", conc, clock)
			ctx := waitCtx(t)
			enqueueIn(t, a, 0, 2) // one batch, answered 429
			if err := col.WaitRequests(ctx, 1); err != nil {
				t.Fatal(err)
			}
			waitRow(t, c, "a", func(r uploader.SourceStats) bool { return r.Paused })
			enqueueIn(t, a, 2, 4)
			enqueueIn(t, b, 0, 6)
			if err := col.WaitEvents(ctx, 6); err != nil {
				t.Fatalf("b's events while a is held: %v (%d requests)", err, len(col.Requests()))
			}
			rb := waitRow(t, c, "b", delivered)
			for _, e := range col.Events() {
				if !strings.Contains(string(e), `"event":"b"`) {
					t.Fatalf("an event of a was accepted during its hold: %s", e)
				}
			}
			if n := requestsWithKey(t, col, "wk-a"); n != 1 {
				t.Errorf("%d requests with a's key during its hold, want the one answered 429", n)
			}
			ra := rowOf(t, c, "a")
			if !ra.Paused || ra.PausedReason != uploader.PausedRetryAfter || !ra.PausedUntil.Equal(budgettest.Epoch.Add(30*time.Second)) || ra.InFlight == 0 {
				t.Errorf("a's row %+v; want paused for its Retry-After until +30 s, its batch in flight", ra)
			}
			if rb.Paused || rb.LastSuccess.IsZero() {
				t.Errorf("b's row %+v; want delivered, not paused", rb)
			}
			limited.Store(false)
			clock.Advance(30 * time.Second)
			if err := col.WaitEvents(ctx, 12); err != nil {
				t.Fatalf("a's events after its hold: %v", err)
			}
		})
	}
}

// The collector refuses one source's write key (401): that source pauses, Stats and Flush say
// so with the key to fix, and the other source's events are delivered meanwhile.
func TestClient_Sources_RefusedCredentialsPauseOnlyTheirSource(t *testing.T) {
	for _, conc := range []string{"1", uploader.DefaultConcurrency} {
		t.Run("concurrency "+conc, func(t *testing.T) {
			col := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
				if keyOf(t, r) == "wk-a" {
					return sink.Response{Status: 401}
				}
				return scripted
			}})
			clock := budgettest.New(time.Time{})
			c, a, b := twoSources(t, col.URL()+"/v1/batch", "", conc, clock)
			ctx := waitCtx(t)
			enqueueIn(t, a, 0, 6)
			if err := col.WaitRequests(ctx, 1); err != nil {
				t.Fatal(err)
			}
			enqueueIn(t, b, 0, 6)
			if err := col.WaitEvents(ctx, 6); err != nil {
				t.Fatalf("b's events while a is refused: %v", err)
			}
			waitRow(t, c, "b", delivered)
			var paused *uploader.AuthPausedError
			if err := c.Flush(ctx); !errors.As(err, &paused) || !strings.Contains(paused.Message, "source a") {
				t.Fatalf("Flush with only a's events left = %v; want an *AuthPausedError naming source a", err)
			}
			ra, rb := rowOf(t, c, "a"), rowOf(t, c, "b")
			if !ra.Paused || ra.PausedReason != uploader.PausedAuthRefused || ra.AuthCode != "401" ||
				ra.AuthKey != "sources.a.upload_write_key" || ra.Events != 6 {
				t.Errorf("a's row %+v; want paused on a 401 naming sources.a.upload_write_key, its 6 events queued", ra)
			}
			if rb.Paused || rb.Events != 0 || rb.LastSuccess.IsZero() {
				t.Errorf("b's row %+v; want delivered, not paused", rb)
			}
			if n := requestsWithKey(t, col, "wk-a"); n != 1 {
				t.Errorf("%d requests with a's key, want the one refused (the next probe is a minute away)", n)
			}
		})
	}
}

// An outage of one source's endpoint opens that source's breaker only: the other source, on
// another endpoint, delivers as if there were none.
func TestClient_Sources_AnOutageOfOneEndpointLeavesTheOtherSourceAlone(t *testing.T) {
	for _, conc := range []string{"1", uploader.DefaultConcurrency} {
		t.Run("concurrency "+conc, func(t *testing.T) {
			down := startScript(t, "503:default")
			col := sinktest.Start(t, sink.Options{})
			clock := budgettest.New(time.Time{})
			c, a, b := twoSources(t, down.URL()+"/v1/batch", col.URL()+"/v1/batch", conc, clock)
			ctx := waitCtx(t)
			enqueueIn(t, a, 0, 6)
			if err := down.WaitRequests(ctx, 1); err != nil {
				t.Fatal(err)
			}
			enqueueIn(t, b, 0, 6)
			if err := col.WaitEvents(ctx, 6); err != nil {
				t.Fatalf("b's events during a's outage: %v", err)
			}
			waitRow(t, c, "b", delivered)
			if ra := rowOf(t, c, "a"); !ra.Paused || ra.PausedReason != uploader.PausedBreakerOpen || ra.Events != 6 {
				t.Errorf("a's row %+v; want its breaker open, its 6 events queued", ra)
			}
			if rb := rowOf(t, c, "b"); rb.Paused || rb.Events != 0 {
				t.Errorf("b's row %+v; want delivered, not paused", rb)
			}
			if n := len(down.Requests()); n > 2 {
				t.Errorf("%d requests to a's endpoint, want at most 2: the failure and the breaker's first probe (the next waits for the probe schedule)", n)
			}
		})
	}
}

// While a source's batch waits out its Retry-After in flight, another source's batch smaller
// than batch.max_events still goes once batch.interval old: the dispatcher, busy with the
// held batch, keeps the interval itself.
func TestClient_Sources_ATailOfAnotherSourceGoesAfterTheIntervalWhileOneIsHeld(t *testing.T) {
	var limited atomic.Bool
	limited.Store(true)
	col := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
		if limited.Load() && keyOf(t, r) == "wk-a" {
			return sink.Response{Status: 429, RetryAfter: "30"}
		}
		return scripted
	}})
	clock := budgettest.New(time.Time{})
	c, a, b := twoSources(t, col.URL()+"/v1/batch", "", uploader.DefaultConcurrency, clock)
	ctx := waitCtx(t)
	enqueueIn(t, a, 0, 2)
	waitRow(t, c, "a", func(r uploader.SourceStats) bool { return r.Paused })
	enqueueIn(t, b, 0, 1) // a tail: one event of two
	// Timers: a's batch waiting out its Retry-After, the dispatcher waiting for the hold or for
	// b's tail to be batch.interval old.
	if err := clock.BlockUntil(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(col.Events()); n != 0 {
		t.Fatalf("%d events delivered before b's tail was batch.interval old", n)
	}
	clock.Advance(uploader.DefaultBatchInterval)
	if err := col.WaitEvents(ctx, 1); err != nil {
		t.Fatalf("b's tail after batch.interval while a is held: %v", err)
	}
	if e := col.Events()[0]; !strings.Contains(string(e), `"event":"b"`) {
		t.Fatalf("delivered %s, want b's event", e)
	}
}

// Flush does not say it waits while another source is still delivering: a source on a
// Retry-After has its batches leased ahead of the hold's end, all of them waiting, but the
// other source's batch in flight is progress. (Flush with a cancelled context evaluates once:
// a *WaitingError then would be the premature answer.)
func TestClient_Sources_FlushDoesNotSayItWaitsWhileAnotherSourceDelivers(t *testing.T) {
	for _, conc := range []string{"1", "4"} {
		t.Run("concurrency "+conc, func(t *testing.T) { flushWhileAnotherSourceDelivers(t, conc) })
	}
}

func flushWhileAnotherSourceDelivers(t *testing.T, conc string) {
	release := make(chan struct{})
	col := sinktest.Start(t, sink.Options{Respond: func(r sink.Request, scripted sink.Response) sink.Response {
		switch keyOf(t, r) {
		case "wk-a":
			return sink.Response{Status: 429, RetryAfter: "30"}
		case "wk-b":
			<-release // b's upload is on its way until the test lets it end
		}
		return scripted
	}})
	t.Cleanup(func() { close(release) })
	clock := budgettest.New(time.Time{})
	c, a, b := twoSources(t, col.URL()+"/v1/batch", "", conc, clock)
	ctx := waitCtx(t)
	enqueueIn(t, a, 0, 2) // one batch, answered 429 Retry-After: 30
	if err := clock.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if conc != "1" {
		enqueueIn(t, a, 2, 6) // three more, leased ahead of the hold's end
		if err := clock.BlockUntil(ctx, 4); err != nil {
			t.Fatalf("a's batches waiting out the hold: %v (%d timers)", err, clock.Pending())
		}
	}
	enqueueIn(t, b, 0, 2) // one batch, held at the collector
	if err := col.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for c.Stats().Upload.InFlight == 0 {
		if ctx.Err() != nil {
			t.Fatal("b's batch never counted in flight")
		}
		runtime.Gosched()
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var we *uploader.WaitingError
	if err := c.Flush(cancelled); errors.As(err, &we) {
		t.Fatalf("Flush: %v while b's batch is on its way; want it to wait for b", err)
	}
}
