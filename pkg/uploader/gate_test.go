package uploader

import (
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

// During an outage one lease probes: the first ready to (not the oldest, which may be waiting
// out the longest backoff), and then only it, until it leaves flight.
func TestGate_OutageProbesWithTheFirstReadyLeaseOnly(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, clk)
	oldest, next, newest := g.add(nil), g.add(nil), g.add(nil)
	g.setWaiting(oldest, true) // the oldest waits out its backoff
	for range 16 {
		g.observe(answerFailed, time.Millisecond)
	}
	if !g.lim.outage() {
		t.Fatal("16 failures in a row at limit 1..32 are not an outage")
	}
	admitted := func(l *lease) bool { return g.state(l, budget.DefaultConfig()).admitted }
	if admitted(oldest) {
		t.Fatal("the waiting oldest lease was admitted")
	}
	if !admitted(next) {
		t.Fatal("the first ready lease was not admitted to probe")
	}
	g.setWaiting(oldest, false)
	if admitted(oldest) || admitted(newest) {
		t.Fatal("a second lease was admitted while the probe is in flight")
	}
	g.setWaiting(next, true) // the probe failed and waits its own backoff: it stays the probe
	if admitted(oldest) {
		t.Fatal("another lease took over the probe while the probe waits")
	}
	g.remove(next) // dead-lettered: the next ready lease probes
	if !admitted(oldest) {
		t.Fatal("after the probe left flight, the next ready lease was not admitted")
	}
	clk.Advance(2 * time.Millisecond) // the probe, sent after every failure, succeeds
	g.observe(answerGood, time.Millisecond)
	if g.lim.outage() || !admitted(newest) {
		t.Fatal("a success did not end the outage")
	}
}

// While the last answer failed and an attempt may still answer, no new batch is leased; once
// every lease waits out a backoff, one may be.
func TestGate_NoNewLeaseWhileAFailureIsUnansweredByASuccess(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, clk)
	a, b := g.add(nil), g.add(nil)
	for range 7 {
		g.observe(answerGood, time.Millisecond) // the limit grows to 4 with 2 in flight
	}
	if !g.room() {
		t.Fatalf("no room with 2 in flight under a limit of %d", g.limit())
	}
	g.observe(answerFailed, time.Millisecond)
	g.setWaiting(a, true)
	if g.room() {
		t.Fatal("a new lease while a failure is unanswered and b may still succeed")
	}
	g.setWaiting(b, true)
	if !g.room() {
		t.Fatal("no new lease while every lease waits out a backoff")
	}
	g.setWaiting(b, false)
	clk.Advance(2 * time.Millisecond) // b's retry, sent after the failure, succeeds
	g.observe(answerGood, time.Millisecond)
	if !g.room() {
		t.Fatal("no new lease after a success")
	}
}

// While our credentials are refused, the head lease alone probes, once a probe period (at
// once after probeNow); the others wait unsent; resuming admits every lease again.
func TestGate_RefusedCredentials_OnlyTheHeadProbesOncePerPeriod(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: "4"}, 0, clk)
	head, other := g.add(nil), g.add(nil)
	if began, warn := g.refuse("401", "upload.write_key"); !began || !warn {
		t.Fatalf("first refusal: began %v warn %v, want both", began, warn)
	}
	if _, warn := g.refuse("401", "upload.write_key"); warn {
		t.Error("a second refusal in the same probe period warned again")
	}
	if v := g.state(head, budget.DefaultConfig()); !v.admitted || !v.refused || v.pause != authProbeInterval {
		t.Errorf("head: pause %s admitted %v refused %v, want a probe in %s", v.pause, v.admitted, v.refused, authProbeInterval)
	}
	if v := g.state(other, budget.DefaultConfig()); v.admitted || !v.refused || v.pause != 0 {
		t.Errorf("other lease: pause %s admitted %v refused %v, want held without a timer", v.pause, v.admitted, v.refused)
	}
	if v := g.state(nil, budget.DefaultConfig()); !v.admitted || v.pause != authProbeInterval {
		t.Errorf("the FIFO loop's batch: pause %s admitted %v, want the probe in %s", v.pause, v.admitted, authProbeInterval)
	}
	clk.Advance(20 * time.Second)
	if !g.probeNow() {
		t.Fatal("probeNow while paused reported no pause")
	}
	if v := g.state(head, budget.DefaultConfig()); !v.admitted || v.pause != 0 {
		t.Errorf("head after probeNow: pause %s admitted %v, want at once", v.pause, v.admitted)
	}
	if since, was := g.resumeAuth(); !was || !since.Equal(time.Unix(0, 0)) {
		t.Errorf("resume: since %v was %v", since, was)
	}
	if v := g.state(other, budget.DefaultConfig()); !v.admitted || v.refused {
		t.Errorf("other lease after the resume: admitted %v refused %v, want admitted", v.admitted, v.refused)
	}
	if g.probeNow() {
		t.Error("probeNow reported a pause after the resume")
	}
}

// After a failure, a lease not yet sent waits until an attempt in flight answers: its success
// says the destination is up, and in the first round trip of an outage the batches already
// on the way are all the requests it gets. A retry, and a new lease when nothing else is in
// flight, are not held.
func TestGate_AfterAFailureANewLeaseWaitsForTheAttemptsInFlight(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, clk)
	g.lim.limit = 8
	sent, failed, fresh := g.add(nil), g.add(nil), g.add(nil)
	admitted := func(l *lease) bool { return g.state(l, budget.DefaultConfig()).admitted }
	if !g.begin(sent) || !g.begin(failed) {
		t.Fatal("begin refused a lease's first attempt while nothing had failed")
	}
	g.observe(answerFailed, time.Millisecond)
	g.end()
	if admitted(fresh) {
		t.Fatal("a lease never sent was admitted while the last answer failed and an attempt is in flight")
	}
	if !admitted(failed) {
		t.Fatal("the retry of the failed lease was held: it follows its own backoff")
	}
	clk.Advance(2 * time.Millisecond) // sent after the failure was: its success ends the streak
	g.observe(answerGood, time.Millisecond)
	if !admitted(fresh) {
		t.Fatal("after a success the new lease was held while another attempt was in flight")
	}
	g.end()
	if !admitted(fresh) {
		t.Fatal("after a success the new lease was still held")
	}
	other, another := g.add(nil), g.add(nil)
	g.observe(answerFailed, time.Millisecond)
	if !admitted(other) || !admitted(another) {
		t.Fatal("with nothing in flight to answer, a new lease was held for good")
	}
	if !g.begin(other) {
		t.Fatal("begin refused the first new lease admitted with nothing in flight")
	}
	if g.begin(another) || admitted(another) {
		t.Fatal("a second new lease was sent beside the first while the last answer failed")
	}
}

// A 30 s total outage costs no more requests under auto than with one batch in flight,
// whatever the limit when it began: the batches in flight then were sent before it and fail
// once each, as the one batch of upload.concurrency: 1 does; the requests counted are those
// begun during the outage. The leases are simulated on the gate and a fake clock: each waits
// out its own jittered backoff, then asks the gate, as the worker does.
func TestGate_AnOutageCostsNoMoreRequestsThanOneBatchInFlight(t *testing.T) {
	const outage = 30 * time.Second
	retry := budget.DefaultConfig()
	for _, jitter := range []float64{0, 0.5, 0.999} {
		rnd := func() float64 { return jitter }
		serial := simulateOutage(t, 1, outage, retry, rnd, UploadConfig{Concurrency: "1", MaxConcurrency: 32})
		if serial < 5 {
			t.Fatalf("jitter %v: one batch in flight retried %d times in %s, want at least 5 (0.5+1+2+4+8 s)", jitter, serial, outage)
		}
		for _, limit := range []int{1, 2, 3, 4, 5, 6, 8, 16, 32} {
			auto := UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}
			if got := simulateOutage(t, limit, outage, retry, rnd, auto); got > serial {
				t.Errorf("jitter %v, %d in flight when it began: %d requests begun during the outage, want at most %d (one batch in flight)",
					jitter, limit, got, serial)
			}
		}
	}
}

// simulateOutage counts the attempts begun within d of an outage that began with limit
// batches in flight, each failing at its start; a lease the gate holds asks again every
// millisecond, and every attempt answers a millisecond after it begins.
func simulateOutage(t *testing.T, limit int, d time.Duration, retry budget.Config, rnd budget.RandFunc, cfg UploadConfig) int {
	t.Helper()
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(cfg, 0, clk)
	g.lim.limit = float64(limit)
	type sim struct {
		l       *lease
		b       *budget.Backoff
		readyAt time.Time
	}
	sims := make([]*sim, limit)
	for i := range sims {
		sims[i] = &sim{l: g.add(nil), b: budget.NewBackoff(retry, clk, rnd)}
	}
	fail := func(s *sim) {
		g.observe(answerFailed, time.Millisecond)
		w, err := s.b.Next()
		if err != nil {
			t.Fatal(err)
		}
		g.setWaiting(s.l, true)
		s.readyAt = clk.Now().Add(w)
	}
	for _, s := range sims { // in flight when the outage began
		fail(s)
	}
	end, attempts := clk.Now().Add(d), 0
	for {
		s := sims[0]
		for _, o := range sims {
			if o.readyAt.Before(s.readyAt) {
				s = o
			}
		}
		if !s.readyAt.Before(end) {
			return attempts
		}
		clk.Advance(s.readyAt.Sub(clk.Now()))
		g.setWaiting(s.l, false)
		var v verdict
		if cfg.Concurrency == "1" {
			v = g.state(nil, retry)
		} else {
			v = g.state(s.l, retry)
		}
		switch {
		case v.pause > 0:
			s.readyAt = clk.Now().Add(v.pause)
		case !v.admitted:
			s.readyAt = clk.Now().Add(time.Millisecond)
		default:
			attempts++
			clk.Advance(time.Millisecond)
			fail(s)
		}
	}
}
