package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

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
	informed    int64         // of requests, those begun after the client had its first failed answer
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
	// When each request began, on the client's side: a request in flight when the outage begins
	// was sent before it, whatever the collector answers it, and with many batches in flight
	// the collector answers some of those only after the switch.
	// The client learns of a failure when the worker has classified it (OnAttempt runs after
	// the gate has seen the answer): a request begun between the answer's arrival and then was
	// on its way before the client could know, as the ones in flight when the outage began.
	rt := &timedTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
	onAttempt := func(a uploader.AttemptInfo) {
		if a.Path == uploader.PathBackoff {
			rt.learnt(time.Now())
		}
	}
	c, err := openClientWith(dir, s.endpoint(), func(cfg *uploader.Config) { cfg.Upload.Concurrency = conc },
		uploader.WithTransport(rt), uploader.WithHooks(uploader.Hooks{OnAttempt: onAttempt}))
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
	rt.mu.Lock()
	defer rt.mu.Unlock()
	informedAt := end
	for _, at := range rt.known {
		if !at.Before(start) && at.Before(informedAt) {
			informedAt = at
		}
	}
	for _, at := range rt.began {
		if !at.Before(start) && at.Before(end) {
			res.requests++
			if !at.Before(informedAt) {
				res.informed++
			}
		}
	}
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
				"began %s batch requests during the outage (%s of them after it had classified its first failed answer), and the collector answered %s "+
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
			rw.target = "after the first failure ≤ concurrency 1 + 1, 0 lost"
			rw.verdict = verdict(r.informed <= one.informed+1 && lost == 0 && r.dead == 0)
		} else {
			rw.ref, rw.target, rw.verdict = "(reference)", "0 lost", verdict(lost == 0 && r.dead == 0)
		}
		rs = append(rs, rw)
	}
	return rs
}

// timedTransport records when each request began, and when the worker classified a failed answer.
type timedTransport struct {
	next http.RoundTripper

	mu    sync.Mutex // guards the fields below
	began []time.Time
	known []time.Time // when the worker had classified a failed answer
}

// learnt records that the worker classified a failed answer at t.
func (t *timedTransport) learnt(at time.Time) {
	t.mu.Lock()
	t.known = append(t.known, at)
	t.mu.Unlock()
}

// RoundTrip sends req through next, recording when it began.
func (t *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.began = append(t.began, time.Now())
	t.mu.Unlock()
	return t.next.RoundTrip(req)
}
