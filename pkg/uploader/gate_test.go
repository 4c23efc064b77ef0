package uploader

import (
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

// During an outage one lease probes: the first ready to (not the oldest, which may be waiting
// out the longest backoff), and then only it, until it leaves flight.
func TestGate_OutageProbesWithTheFirstReadyLeaseOnly(t *testing.T) {
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, budgettest.New(time.Unix(0, 0)))
	oldest, next, newest := g.add(nil), g.add(nil), g.add(nil)
	g.setWaiting(oldest, true) // the oldest waits out its backoff
	for range 16 {
		g.observe(answerFailed, time.Millisecond)
	}
	if !g.lim.outage() {
		t.Fatal("16 failures in a row at limit 1..32 are not an outage")
	}
	admitted := func(l *lease) bool { _, ok, _, _ := g.state(l); return ok }
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
	g.observe(answerGood, time.Millisecond)
	if g.lim.outage() || !admitted(newest) {
		t.Fatal("a success did not end the outage")
	}
}

// While the last answer failed and an attempt may still answer, no new batch is leased; once
// every lease waits out a backoff, one may be.
func TestGate_NoNewLeaseWhileAFailureIsUnansweredByASuccess(t *testing.T) {
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, budgettest.New(time.Unix(0, 0)))
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
	if pause, ok, refused, _ := g.state(head); !ok || !refused || pause != authProbeInterval {
		t.Errorf("head: pause %s admitted %v refused %v, want a probe in %s", pause, ok, refused, authProbeInterval)
	}
	if pause, ok, refused, _ := g.state(other); ok || !refused || pause != 0 {
		t.Errorf("other lease: pause %s admitted %v refused %v, want held without a timer", pause, ok, refused)
	}
	if pause, ok, _, _ := g.state(nil); !ok || pause != authProbeInterval {
		t.Errorf("the FIFO loop's batch: pause %s admitted %v, want the probe in %s", pause, ok, authProbeInterval)
	}
	clk.Advance(20 * time.Second)
	if !g.probeNow() {
		t.Fatal("probeNow while paused reported no pause")
	}
	if pause, ok, _, _ := g.state(head); !ok || pause != 0 {
		t.Errorf("head after probeNow: pause %s admitted %v, want at once", pause, ok)
	}
	if since, was := g.resumeAuth(); !was || !since.Equal(time.Unix(0, 0)) {
		t.Errorf("resume: since %v was %v", since, was)
	}
	if _, ok, refused, _ := g.state(other); !ok || refused {
		t.Errorf("other lease after the resume: admitted %v refused %v, want admitted", ok, refused)
	}
	if g.probeNow() {
		t.Error("probeNow reported a pause after the resume")
	}
}
