package uploader

import (
	"fmt"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
)

// An outage costs at most the requests in flight when it began plus the breaker's probe
// schedule (one check at once, then one batch's backoff from its first failure), in every
// mode: a fixed upload.concurrency of 4 as under auto, whatever auto's limit was. The batches are simulated
// on the gate and a fake clock as the worker drives them: each waits out its own jittered
// backoff, then asks the gate; the dispatcher leases a fresh batch whenever the gate has room.
func TestGate_AnOutageCostsTheRequestsInFlightPlusTheProbeSchedule(t *testing.T) {
	const outage = 30 * time.Second
	retry := budget.DefaultConfig()
	for _, jitter := range []float64{0, 0.5, 0.999} {
		rnd := func() float64 { return jitter }
		probes := simulateOutage(t, UploadConfig{Concurrency: "1", MaxConcurrency: 32}, 1, outage, retry, rnd)
		if probes < 5 {
			t.Fatalf("jitter %v: one batch in flight retried %d times in %s, want at least 5 (0.5+1+2+4+8 s)", jitter, probes, outage)
		}
		modes := []struct {
			cfg   UploadConfig
			limit int
		}{{UploadConfig{Concurrency: "4", MaxConcurrency: 32}, 4}, {UploadConfig{Concurrency: "4", MaxConcurrency: 32}, 1}}
		for _, l := range []int{1, 2, 3, 6, 8, 16, 32} {
			modes = append(modes, struct {
				cfg   UploadConfig
				limit int
			}{UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, l})
		}
		for _, m := range modes {
			t.Run(fmt.Sprintf("jitter %v, concurrency %s, %d in flight", jitter, m.cfg.Concurrency, m.limit), func(t *testing.T) {
				if got := simulateOutage(t, m.cfg, m.limit, outage, retry, rnd); got > 1+probes {
					t.Errorf("%d requests begun during the outage after the %d in flight when it began; want at most the check and the probe schedule's %d",
						got, m.limit, probes)
				}
			})
		}
	}
}

// simulateOutage counts the attempts begun within d of an outage that began with inflight
// attempts on their way (not counted), every attempt failing a millisecond after it begins.
func simulateOutage(t *testing.T, cfg UploadConfig, inflight int, d time.Duration, retry budget.Config, rnd budget.RandFunc) int {
	t.Helper()
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(cfg, 0, clk, testPace, nil)
	g.autoLocked("").limit = float64(inflight)
	serial := cfg.Concurrency == "1"
	type sim struct {
		id      uint64
		b       *budget.Backoff
		readyAt time.Time
	}
	var sims []*sim
	newSim := func() *sim {
		s := &sim{b: budget.NewBackoff(retry, clk, rnd), readyAt: clk.Now()}
		if !serial {
			s.id = g.add(nil).seq
		}
		sims = append(sims, s)
		return s
	}
	fail := func(s *sim) {
		g.finish(s.id, &delivery.Outcome{Class: delivery.ClassRetryable, Status: 503}, time.Millisecond)
		w, err := s.b.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !serial {
			g.setWaiting(&lease{seq: s.id}, true)
		}
		s.readyAt = clk.Now().Add(w)
	}
	for range inflight { // in flight when the outage began
		if s := newSim(); !g.tryBegin(s.id).admitted {
			t.Fatalf("attempt %d of those in flight not admitted", s.id)
		}
	}
	clk.Advance(time.Millisecond)
	for _, s := range sims {
		fail(s)
	}
	end, attempts := clk.Now().Add(d), 0
	for {
		for !serial && g.room(DefaultSource) {
			newSim()
		}
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
		if !serial {
			g.setWaiting(&lease{seq: s.id}, false)
		}
		switch v := g.tryBegin(s.id); {
		case v.admitted:
			attempts++
			clk.Advance(time.Millisecond)
			fail(s)
		case v.pause > 0:
			s.readyAt = clk.Now().Add(v.pause)
		default:
			s.readyAt = clk.Now().Add(10 * time.Millisecond)
		}
	}
}

func TestGate_RefusedCredentials_OnlyTheHeadProbesOncePerPeriod(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: "4"}, 0, clk, testPace, nil)
	head, other := g.add(nil), g.add(nil)
	if began, warn := g.refuse(DefaultSource, "401", "upload.write_key"); !began || !warn {
		t.Fatalf("first refusal: began %v, warn %v", began, warn)
	}
	if v := g.tryBegin(head.seq); v.admitted || !v.refused || v.pause != authProbeInterval {
		t.Fatalf("head: %+v; want a probe one period on", v)
	}
	if v := g.tryBegin(other.seq); v.admitted || !v.refused || v.pause != 0 {
		t.Fatalf("other: %+v; want held without a pause of its own", v)
	}
	if !g.probeNow() {
		t.Fatal("probeNow while refused")
	}
	if v := g.tryBegin(head.seq); !v.admitted {
		t.Fatalf("head after probeNow: %+v; want it to probe at once", v)
	}
	g.finish(head.seq, &delivery.Outcome{Class: delivery.ClassSuccess, Status: 200}, time.Millisecond)
	if _, was := g.resumeAuth(DefaultSource); !was {
		t.Fatal("resumeAuth found no hold")
	}
	if v := g.tryBegin(other.seq); !v.admitted || v.refused {
		t.Fatalf("other after the hold ended: %+v; want admitted", v)
	}
}

func TestGate_FixedLimit_AdmitsTheOldestBatchesNotWaiting(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: "2"}, 0, clk, testPace, nil)
	a, b, c := g.add(nil), g.add(nil), g.add(nil)
	if !g.tryBegin(a.seq).admitted || !g.tryBegin(b.seq).admitted {
		t.Fatal("the two oldest were not admitted under a limit of 2")
	}
	if g.tryBegin(c.seq).admitted {
		t.Fatal("a third was admitted under a limit of 2")
	}
	g.finish(a.seq, &delivery.Outcome{Class: delivery.ClassRetryable, Status: 503}, time.Millisecond)
	g.finish(b.seq, &delivery.Outcome{Class: delivery.ClassSuccess, Status: 200}, time.Millisecond) // the destination is up
	g.setWaiting(a, true)
	if !g.tryBegin(c.seq).admitted {
		t.Fatal("with the oldest waiting out its backoff, the third was not admitted")
	}
}

func TestGate_KafkaThrottleLowersTheLimit(t *testing.T) {
	clk := budgettest.New(time.Unix(0, 0))
	g := newGate(UploadConfig{Concurrency: DefaultConcurrency, MaxConcurrency: 32}, 0, clk, testPace, nil)
	g.autoLocked("").limit = 16
	for range 16 {
		g.add(nil)
	}
	l := g.add(nil)
	g.slots.begin(l.seq)
	g.finish(l.seq, &delivery.Outcome{Class: delivery.ClassSuccess, Code: "ok", BackPressure: true}, time.Millisecond)
	if got := g.limit(); got != 8 {
		t.Fatalf("limit %d after a throttled success, want 8", got)
	}
}

// room reports whether the dispatcher may lease a batch of source now.
func (g *gate) room(source string) bool {
	ok, _ := g.leasable(source, false)
	return ok
}

// testPace is the breaker's probe schedule with the default retry settings.
func testPace(n int) time.Duration { return budget.Unjittered(budget.DefaultConfig(), n) }
