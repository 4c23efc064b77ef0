package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// outageResult is one run through a total outage: the library draining a full queue, the
// collector answering every request 503 for the outage's length once a quarter of the events
// were delivered, then 200 again.
type outageResult struct {
	concurrency string // upload.concurrency of the run
	events      int
	atStart     int64         // events delivered when the outage began
	limitAt     int           // the concurrency limit then
	requests    int64         // batch requests the client began during the outage
	answered    int64         // batch requests the collector answered during it (those in flight when it began included)
	informed    int64         // of requests, those begun after the client had a failed answer with no success after it
	recovery    time.Duration // end of the outage → the collector holds every event
	unique      int64
	dead        int64
	err         error
}

// runOutage runs the outage with upload.concurrency auto, a fixed 4 and 1, side by side (each
// its own queue and collector): the outage is real time, and running them at once shortens
// the section.
func (b *bench) runOutage(ctx context.Context) {
	n := b.opt.faultEvents
	runs := []string{uploader.DefaultConcurrency, "4", "1"}
	b.progress("outage: %s queued events, then every request 503 for %s once a quarter were delivered; upload.concurrency %v side by side",
		thousands(int64(n)), b.opt.outage, runs)
	b.outage = make([]outageResult, len(runs))
	var wg sync.WaitGroup
	for i, conc := range runs {
		d := b.dir("outage-" + conc)
		if err := fillQueue(d, b.gen, 0, n); err != nil {
			b.fail("outage", err)
			return
		}
		wg.Go(func() {
			defer b.drop(d)
			b.outage[i] = outageRun(ctx, d, n, conc, b.opt.outage, b.opt.drainLimit)
		})
	}
	wg.Wait()
	for _, r := range b.outage {
		if r.err != nil {
			b.failed++
			b.progress("outage, upload.concurrency %s failed: %v", r.concurrency, r.err)
		}
	}
}

// outageRun drains dir's n queued events with upload.concurrency conc through an outage of
// length down.
func outageRun(ctx context.Context, dir string, n int, conc string, down, limit time.Duration) outageResult {
	res := outageResult{concurrency: conc, events: n}
	fail := func(err error) outageResult { res.err = err; return res }
	outage, err := sink.ParseFaults(outageSpec)
	if err != nil {
		return fail(err)
	}
	s, err := startSink(sink.Script{})
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	// When each attempt began, on the client's side: when the gate admitted it and the worker
	// handed it to the destination (the request reaches the transport later, by however long
	// the goroutine waits for a core). A request in flight when the outage begins was sent
	// before it, whatever the collector answers it, and with many batches in flight the
	// collector answers some of those only after the switch.
	// The client learns of an outage from a failed answer with no success after it, in the
	// order the gate sees them: when the destination returns each answer, which the gate's
	// breaker reads next (the OnAttempt hook comes later, after the batch's ack or retry state
	// has been written, so hooks of answers read together may come in another order). An
	// attempt begun before then was on its way before the client could know, as the ones in
	// flight when the outage began. A success after a failure says the collector was up when
	// it answered: requests overtake each other on the way, so one begun after the failed one
	// may have reached the collector before it went down.
	rt := &attemptTimes{}
	c, err := openClientWith(dir, s.endpoint(), func(cfg *uploader.Config) { cfg.Upload.Concurrency = conc },
		uploader.WithDestinationFunc(timedDestinationFunc(rt)))
	if err != nil {
		return fail(err)
	}
	defer closeClient(c)
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := s.Wait(wctx, func(st sink.Stats) bool { return st.Unique >= int64(n/4) }); err != nil {
		return fail(fmt.Errorf("before the outage: %w", err))
	}
	if err := s.SetScript(outage); err != nil {
		return fail(err)
	}
	st0, start := s.Stats(), time.Now()
	res.atStart, res.limitAt = st0.Unique, c.Stats().Upload.ConcurrencyLimit
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	if err := s.SetScript(sink.Script{}); err != nil {
		return fail(err)
	}
	end := time.Now()
	res.answered = s.Stats().Requests - st0.Requests
	err = s.Wait(wctx, func(st sink.Stats) bool { return st.Unique >= int64(n) })
	res.recovery, res.unique, res.dead = time.Since(end), s.Stats().Unique, c.Stats().Dead.Events
	res.requests, res.informed = rt.count(start, end)
	if err != nil {
		return fail(fmt.Errorf("after the outage the collector holds %d of %d events (dead %d): %w", res.unique, n, res.dead, err))
	}
	return res
}

// outageRows are the runs: requests sent during the outage, held to what concurrency 1 sends
// (the requests in flight when it began aside), and the events delivered after it.
func (b *bench) outageRows() []row {
	if len(b.outage) == 0 {
		return []row{b.errRow("outage", "outage")}
	}
	var one *outageResult
	for i := range b.outage {
		if r := &b.outage[i]; r.concurrency == "1" && r.err == nil {
			one = r
		}
	}
	var rs []row
	for _, r := range b.outage {
		name := fmt.Sprintf("%s outage, upload.concurrency %s: requests", b.opt.outage, r.concurrency)
		if r.err != nil {
			rs = append(rs, row{name: name, result: "error", verdict: "error", detail: r.err.Error()})
			continue
		}
		lost := int64(r.events) - r.unique
		rw := row{name: name, result: fmt.Sprintf("%s requests, %s after", thousands(r.requests), thousands(r.informed)),
			detail: fmt.Sprintf("outage (upload.concurrency %s): uploader.Client with defaults draining %s queued events; once %s were "+
				"delivered (concurrency limit %d then) the collector answered every request 503 (%q) for %s, then 200: the client "+
				"began %s batch requests during the outage (%s of them after it had a failed answer with no success after it), and the collector answered %s "+
				"in it (those in flight when it began included); after it the collector held all %s distinct events %s later; lost %d, dead-lettered %d.",
				r.concurrency, thousands(int64(r.events)), thousands(r.atStart), r.limitAt, outageSpec, b.opt.outage,
				thousands(r.requests), thousands(r.informed), thousands(r.answered), thousands(r.unique), secs(r.recovery), lost, r.dead)}
		if r.concurrency != "1" && one != nil {
			// The bound: the requests in flight when the outage began (one with concurrency 1,
			// up to the limit with several), then the breaker's probe schedule, which is one
			// check at once and then one batch's backoff: the requests begun after the first
			// failed answer are held to what concurrency 1 begins after its own, plus the check.
			rw.ref = fmt.Sprintf("%s, %s after (concurrency 1)", thousands(one.requests), thousands(one.informed))
			rw.ratio = times(float64(r.informed) / float64(max(one.informed, 1)))
			rw.target = "after it was known ≤ concurrency 1 + 1, 0 lost"
			rw.verdict = verdict(r.informed <= one.informed+1 && lost == 0 && r.dead == 0)
		} else {
			rw.ref, rw.target, rw.verdict = "(reference)", "0 lost", verdict(lost == 0 && r.dead == 0)
		}
		rs = append(rs, rw)
	}
	return rs
}

// attemptTimes records when the client began each attempt, and when a failed or a successful
// answer came back to it.
type attemptTimes struct {
	mu    sync.Mutex // guards the fields below
	began []time.Time
	known []classified
}

// classified is when an answer came back, and whether it was a success.
type classified struct {
	at time.Time
	ok bool
}

// count returns the attempts begun in [start, end), and of them those begun once the client
// had a failed answer with no success after it within the window.
func (t *attemptTimes) count(start, end time.Time) (requests, informed int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lastOK time.Time
	for _, k := range t.known {
		if k.ok && !k.at.Before(start) && k.at.Before(end) && k.at.After(lastOK) {
			lastOK = k.at
		}
	}
	informedAt := end
	for _, k := range t.known {
		if !k.ok && !k.at.Before(start) && k.at.After(lastOK) && k.at.Before(informedAt) {
			informedAt = k.at
		}
	}
	for _, at := range t.began {
		if !at.Before(start) && at.Before(end) {
			requests++
			if !at.Before(informedAt) {
				informed++
			}
		}
	}
	return requests, informed
}

// learnt records that an answer came back at t: a success (ok) or a retryable failure.
func (t *attemptTimes) learnt(at time.Time, ok bool) {
	t.mu.Lock()
	t.known = append(t.known, classified{at: at, ok: ok})
	t.mu.Unlock()
}

// begin records that an attempt began at t.
func (t *attemptTimes) begin(at time.Time) {
	t.mu.Lock()
	t.began = append(t.began, at)
	t.mu.Unlock()
}

// timedDestination is the HTTP destination, recording when each attempt is handed to it: the
// gate has just admitted it, so that is when the client decided to send. Embedding keeps the
// destination's other methods (its bound, its payloads built ahead, its credentials).
type timedDestination struct {
	*httpdest.Destination
	times *attemptTimes
}

// Send records the attempt's start, sends it, and records when a success or a retryable
// failure came back.
func (d timedDestination) Send(ctx context.Context, b delivery.Batch) delivery.Outcome {
	d.times.begin(time.Now())
	o := d.Destination.Send(ctx, b)
	switch o.Class {
	case delivery.ClassSuccess:
		d.times.learnt(time.Now(), true)
	case delivery.ClassRetryable:
		d.times.learnt(time.Now(), false)
	}
	return o
}

// timedDestinationFunc builds the client's HTTP destination as segment.Open does, timed.
func timedDestinationFunc(times *attemptTimes) uploader.DestinationFunc {
	return func(p uploader.DestinationParams) (delivery.Destination, error) {
		d, err := segment.Destination(p)
		if err != nil {
			return nil, err
		}
		hd, ok := d.(*httpdest.Destination)
		if !ok {
			return nil, fmt.Errorf("segment.Destination built a %T, want *httpdest.Destination", d)
		}
		return timedDestination{Destination: hd, times: times}, nil
	}
}
