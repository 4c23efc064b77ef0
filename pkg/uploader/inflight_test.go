package uploader_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// inFlightCounter wraps the real transport and counts the requests it has open at once. A
// reset starts a new generation: the peak counts only the requests begun since, so requests
// already in flight at the reset (which are allowed to finish) do not count.
type inFlightCounter struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	gen  int
	now  int // open requests of generation gen
	peak int // the most of them open at once
}

func newInFlightCounter() *inFlightCounter {
	return &inFlightCounter{rt: http.DefaultTransport.(*http.Transport).Clone()}
}

func (c *inFlightCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	gen := c.gen
	c.now++
	c.peak = max(c.peak, c.now)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.gen == gen {
			c.now--
		}
		c.mu.Unlock()
	}()
	// Counted until the response headers arrive: the sink answers a batch only once it has
	// read it, so this is the span in which the collector holds the request.
	return c.rt.RoundTrip(r)
}

// resetPeak starts a new generation and returns the old one's peak.
func (c *inFlightCounter) resetPeak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peak
	c.gen++
	c.now, c.peak = 0, 0
	return p
}

func TestInFlight_AutoRampsUpAgainstASlowCollectorAndDeliversEverythingOnce(t *testing.T) {
	s := startScript(t, "200:delay=50ms:default")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cnt := newInFlightCounter()
	c := open(t, cfg, uploader.WithTransport(cnt))
	enqueue(t, c, 0, 400) // 200 full batches
	if err := c.Flush(waitCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	st := s.Stats()
	if st.Events != 400 || st.Duplicates != 0 {
		t.Fatalf("collector has %d events (%d duplicates), want 400 once each", st.Events, st.Duplicates)
	}
	// Slow start reaches 8 within 4 round trips; a loaded machine can inflate a round trip past
	// twice its baseline and halve the limit on the way, so the bar is 8, not 32.
	if p := cnt.resetPeak(); p < 8 {
		t.Errorf("at most %d requests were in flight at once, want the auto limit to ramp to at least 8", p)
	}
	if got := c.Stats().Upload.ConcurrencyLimit; got < 4 {
		t.Errorf("ConcurrencyLimit = %d after the drain, want at least 4", got)
	}
}

func TestInFlight_AnOutageFallsToOneBatchInFlight(t *testing.T) {
	// 40 successes let the limit grow, then every request fails.
	s := startScript(t, "200x40,503:default")
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cfg.Retry.MaxRetries = 2 // a batch is dead-lettered after 3 attempts, and the next one goes
	cnt := newInFlightCounter()
	c := open(t, cfg, uploader.WithTransport(cnt), uploader.WithClock(autoClock()))
	enqueue(t, c, 0, 400)
	ctx := waitCtx(t)
	if err := s.WaitRequests(ctx, 40); err != nil {
		t.Fatal(err)
	}
	for c.Stats().Upload.ConcurrencyLimit != 1 {
		if err := s.WaitRequests(ctx, len(s.Requests())+1); err != nil {
			t.Fatalf("the limit did not fall to 1 under the outage (it is %d): %v", c.Stats().Upload.ConcurrencyLimit, err)
		}
	}
	if p := cnt.resetPeak(); p < 2 {
		t.Errorf("at most %d requests were in flight at once before the outage, want the limit to have grown", p)
	}
	// From here on the outage costs what one batch in flight costs: of the requests begun
	// since the limit fell, one at a time, each batch's attempts in a row. Those admitted
	// before it fell (at most max_concurrency) may still begin their requests just after;
	// they are past once that many more requests have arrived.
	n := len(s.Requests())
	if err := s.WaitRequests(ctx, n+uploader.DefaultMaxConcurrency); err != nil {
		t.Fatal(err)
	}
	cnt.resetPeak()
	if err := s.WaitRequests(ctx, n+64); err != nil {
		t.Fatal(err)
	}
	if p := cnt.resetPeak(); p > 1 {
		t.Errorf("%d requests begun during the outage were in flight at once, want 1", p)
	}
	// The sink records requests as they arrive; the ones in flight when the limit fell arrived
	// before n, or among the next max_concurrency.
	first := n + uploader.DefaultMaxConcurrency
	reqs := s.Requests()[first : n+64]
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		pc, _ := prev.RetryCount()
		if cur.MessageIDs[0] != prev.MessageIDs[0] && pc != cfg.Retry.MaxRetries {
			t.Fatalf("request %d is of batch %s while batch %s had made %d of its %d attempts: two batches attempted during the outage",
				first+i, cur.MessageIDs[0], prev.MessageIDs[0], pc+1, cfg.Retry.MaxRetries+1)
		}
	}
}

func TestInFlight_NoAttemptStartsDuringARetryAfterPause(t *testing.T) {
	clock := budgettest.New(time.Time{})
	sc, err := sink.ParseFaults("429x1:ra=10")
	if err != nil {
		t.Fatal(err)
	}
	s := sinktest.Start(t, sink.Options{Script: sc, Now: clock.Now})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = "8"
	c := open(t, cfg, uploader.WithClock(clock))
	ctx := waitCtx(t)
	enqueue(t, c, 0, 2)                              // one batch, answered 429 Retry-After: 10
	if err := clock.BlockUntil(ctx, 1); err != nil { // it waits out its Retry-After
		t.Fatalf("waiting for the rate-limited answer: %v", err)
	}
	start := clock.Now()
	enqueue(t, c, 2, 12) // six more batches, leased while the pause runs
	// Seven timers: the first batch waiting out its Retry-After, six waiting for the pause.
	if err := clock.BlockUntil(ctx, 7); err != nil {
		t.Fatalf("waiting for the batches to wait: %v (%d timers, %d requests)", err, clock.Pending(), len(s.Requests()))
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests before the Retry-After passed, want only the rate-limited one", n)
	}
	clock.Advance(10 * time.Second)
	if err := s.WaitEvents(ctx, 14); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	for i, r := range reqs[1:] {
		if r.Time.Before(start.Add(10 * time.Second)) {
			t.Errorf("request %d started at +%s, inside the 10 s pause", 1+i, r.Time.Sub(start))
		}
		n, ok := r.RetryCount()
		if first := r.MessageIDs[0] == "m-0"; ok != first || (ok && n != 1) {
			t.Errorf("request %d (batch %s) has X-Retry-Count %d (present %v), want 1 on the rate-limited batch only", 1+i, r.MessageIDs[0], n, ok)
		}
	}
	if st := c.Stats(); st.Counters.RetriesBackoff != 0 || st.Counters.RetriesRateLimit != 1 {
		t.Errorf("retries: %d backoff, %d rate-limit; want the pause to spend nothing but the one Retry-After",
			st.Counters.RetriesBackoff, st.Counters.RetriesRateLimit)
	}
}

func TestInFlight_CloseIsBoundedWithManyBatchesInFlightAndLeavesThemQueued(t *testing.T) {
	s := startScript(t, "hang:default")
	dir := t.TempDir()
	cfg := testConfig(dir, s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = "16"
	cfg.Upload.Timeout = time.Hour
	c := open(t, cfg, uploader.WithClock(budgettest.New(time.Time{})))
	enqueue(t, c, 0, 64)
	if err := s.WaitRequests(waitCtx(t), 16); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().Upload.InFlight; got != 16 {
		t.Errorf("InFlight = %d, want 16", got)
	}
	if err := closeWithin(t, c, 300*time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2 := sinkOK(t)
	cfg.Upload.Endpoint = s2.URL() + "/v1/batch"
	c2 := open(t, cfg)
	if err := c2.Flush(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st := s2.Stats(); st.Unique != 64 {
		t.Fatalf("after the restart the collector has %d distinct events, want all 64 left queued", st.Unique)
	}
}
