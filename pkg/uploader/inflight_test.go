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

// outageWatch wraps the real transport and watches an outage: once the first failed answer
// (a 503) has arrived, it counts the requests begun before it that were still unanswered
// (those in flight when the outage began) and the most requests begun after it that were open
// at once, past the first skip of them: an attempt admitted before the failure answered may
// reach the transport just after it (its body is built first), and it too was in flight.
type outageWatch struct {
	rt      http.RoundTripper
	skip    int
	mu      sync.Mutex
	down    bool
	open    map[int]bool // requests not yet answered, by number
	seq     int
	before  int // requests open when the first failure answered, that one included
	after   int // requests begun since
	openNow int // of those, open now
	peak    int // of those, the most open at once
}

func newOutageWatch(skip int) *outageWatch {
	return &outageWatch{rt: http.DefaultTransport.(*http.Transport).Clone(), open: map[int]bool{}, skip: skip}
}

func (o *outageWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	o.mu.Lock()
	o.seq++
	id, late := o.seq, o.down
	o.open[id] = true
	if late {
		o.after++
		late = o.after > o.skip
	}
	if late {
		o.openNow++
		o.peak = max(o.peak, o.openNow)
	}
	o.mu.Unlock()
	resp, err := o.rt.RoundTrip(r)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down && err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		o.down, o.before = true, len(o.open)
	}
	delete(o.open, id)
	if late {
		o.openNow--
	}
	return resp, err
}

func (o *outageWatch) read() (before, after, peak int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.before, o.after, o.peak
}

// An outage costs the requests already in flight when it began, then one probe at a time, in
// every mode: a fixed upload.concurrency as under auto. The probe schedule's pacing (one
// batch's backoff) is held on the fake clock by TestGate_AnOutageCostsTheRequestsInFlightPlusTheProbeSchedule.
func TestInFlight_AnOutageCostsTheRequestsInFlightThenOneAtATime(t *testing.T) {
	for _, conc := range []string{"4", uploader.DefaultConcurrency} {
		t.Run("concurrency "+conc, func(t *testing.T) {
			// 40 successes let the limit grow, then every request fails.
			s := startScript(t, "200x40,503:default")
			cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
			cfg.Batch.MaxEvents = 2
			cfg.Upload.Concurrency = conc
			cfg.Retry.MaxRetries = 2 // a batch is dead-lettered after 3 attempts, and the next one probes
			most := 4
			if conc == uploader.DefaultConcurrency {
				most = uploader.DefaultMaxConcurrency
			}
			w := newOutageWatch(most)
			c := open(t, cfg, uploader.WithTransport(w), uploader.WithClock(autoClock()))
			enqueue(t, c, 0, 400)
			ctx := waitCtx(t)
			if err := s.WaitRequests(ctx, 40+most+64); err != nil {
				t.Fatal(err)
			}
			before, after, peak := w.read()
			if before < 1 || before > most {
				t.Errorf("%d requests in flight when the outage began, want 1 to %d", before, most)
			}
			if after < most+32 || peak != 1 {
				t.Errorf("%d requests begun after the first failed answer, at most %d at once; want many, one at a time", after, peak)
			}
			if st := c.Stats(); st.Counters.EventsDead == 0 {
				t.Errorf("no batch dead-lettered: the probes did not spend their budgets")
			}
		})
	}
}

// No attempt starts while a Retry-After runs, and the batches of its source are leased ahead
// of its end, up to the limit (their payloads built while they wait), so that they start
// together when it ends.
func TestInFlight_NoAttemptStartsDuringARetryAfterPause(t *testing.T) {
	clock := budgettest.New(time.Time{})
	sc, err := sink.ParseFaults("429x1:ra=10")
	if err != nil {
		t.Fatal(err)
	}
	s := sinktest.Start(t, sink.Options{Script: sc, Now: clock.Now})
	cfg := testConfig(t.TempDir(), s.URL()+"/v1/batch")
	cfg.Batch.MaxEvents = 2
	cfg.Upload.Concurrency = "4"
	c := open(t, cfg, uploader.WithClock(clock))
	ctx := waitCtx(t)
	enqueue(t, c, 0, 2)                              // one batch, answered 429 Retry-After: 10
	if err := clock.BlockUntil(ctx, 1); err != nil { // it waits out its Retry-After
		t.Fatalf("waiting for the rate-limited answer: %v", err)
	}
	start := clock.Now()
	enqueue(t, c, 2, 12) // six more batches: three leased ahead of the hold's end, three after it
	// Five timers: the four batches leased waiting out the Retry-After, the dispatcher waiting
	// for the hold to end before it leases the three others.
	if err := clock.BlockUntil(ctx, 5); err != nil {
		t.Fatalf("waiting for the batches to wait: %v (%d timers, %d requests)", err, clock.Pending(), len(s.Requests()))
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests before the Retry-After passed, want only the rate-limited one", n)
	}
	if row := rowOf(t, c, uploader.DefaultSource); row.InFlight != 4 {
		t.Errorf("%d batches leased during the hold, want the limit of 4", row.InFlight)
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
