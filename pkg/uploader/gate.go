package uploader

import (
	"context"
	"errors"
	"github.com/outboxhq/outbox/pkg/delivery"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// gate admits every attempt, in every mode, by composing four policies under one lock:
//
//   - the hold (hold.go): a Retry-After holds every new attempt until it has passed; refused
//     credentials hold every batch but the head, which probes once per authProbeInterval;
//   - the breaker (breaker.go): after a failure nothing new starts while an answer is
//     pending, and during an outage one probe at a time, paced by its own backoff;
//   - the limit (limit.go): a fixed upload.concurrency, or auto's adaptive one, never above
//     the destination's own bound;
//   - the slots (slots.go): the batches in flight, and their rank among those not waiting.
//
// An attempt starts when the hold has passed, the breaker allows it and its rank is below
// the limit; with upload.concurrency: 1 that is a limit of one with acks in order (ranked).
// A batch waiting out a backoff of its own sends nothing, so its place goes to the next: at
// most twice the most that may be in flight are leased at once (room).
type gate struct {
	mu      sync.Mutex
	fixed   int           // upload.concurrency as a number; 0 for auto (setFixed changes it)
	bound   int           // the destination's own bound; 0 for none
	auto    *aimdLimit    // auto's limit; kept while fixed, so that auto can come back
	hold    hold          // Retry-After and refused credentials
	brk     breaker       // outages
	slots   slots         // the batches in flight
	changed chan struct{} // closed and replaced on every change
	clock   budget.Clock
}

// lease is one batch in flight under the gate.
type lease struct {
	seq uint64
	b   *queue.Lease
}

// newGate returns the gate of a client; pace is the breaker's probe schedule (see breaker).
func newGate(cfg UploadConfig, bound int, clock budget.Clock, pace func(n int) time.Duration) *gate {
	return &gate{fixed: cfg.fixedConcurrency(), bound: bound, changed: make(chan struct{}), clock: clock,
		auto: newAIMDLimit(cfg.MaxConcurrency), brk: breaker{pace: pace}}
}

// setFixed changes upload.concurrency (0: auto). Batches in flight above a smaller limit
// finish the attempt they are in and wait for their rank before the next; switching back to
// auto resumes its limit where it was.
func (g *gate) setFixed(fixed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fixed != fixed {
		g.fixed = fixed
		g.notifyLocked()
	}
}

// limiter is the Limit in force: upload.concurrency as a constant, or auto.
func (g *gate) limiter() Limit {
	if g.fixed != 0 {
		return fixedLimit(g.fixed)
	}
	return g.auto
}

// limit returns how many batches may be in flight now.
func (g *gate) limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limitLocked()
}

func (g *gate) limitLocked() int {
	n := g.limiter().Limit()
	if g.bound > 0 {
		n = min(n, g.bound)
	}
	return max(n, 1)
}

// room reports whether the dispatcher may lease one more batch: fewer than twice the most that
// may be in flight are leased, no more than the limit are in flight (leased and not waiting
// out a retry wait; one more than the limit is leased so that its payload is prepared ahead
// of its turn), and, after a failure, no batch not waiting may still answer: its answer says
// whether the destination is up, and without this rule each failure, freeing its place while
// it waits, would lease a fresh batch into what may be an outage.
func (g *gate) room() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.brk.state() != "closed" && g.slots.inFlight() > 0 {
		return false
	}
	most := g.fixed
	if most == 0 {
		most = g.auto.ceil
	}
	if g.bound > 0 {
		most = min(most, g.bound)
	}
	return len(g.slots.live) < 2*max(most, 1) && g.slots.inFlight() <= g.limitLocked()
}

// setWaiting marks l as waiting out a retry wait of its own (or no longer).
func (g *gate) setWaiting(l *lease, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.slots.setWaiting(l.seq, on)
	g.notifyLocked()
}

// inFlight returns the number of batches in flight and not waiting out a retry wait (the one
// prepared ahead of its turn is not yet in flight).
func (g *gate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return min(g.slots.inFlight(), g.limitLocked())
}

// add registers a newly leased batch, the newest in flight.
func (g *gate) add(b *queue.Lease) *lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.slots.add()
	g.notifyLocked()
	return &lease{seq: id, b: b}
}

// remove unregisters a lease that has left flight (delivered, dead-lettered, or given up).
func (g *gate) remove(l *lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.slots.remove(l.seq)
	g.notifyLocked()
}

// pauseUntil holds every new attempt until t (a usable Retry-After); the latest deadline wins.
func (g *gate) pauseUntil(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold.retryAfter(t) {
		g.notifyLocked()
	}
}

func (g *gate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// next returns the channel closed at the gate's next change.
func (g *gate) next() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// verdict is what the gate says of one attempt.
type verdict struct {
	pause    time.Duration // wait this long first (0: none): a Retry-After, a probe of refused credentials
	path     string        // what the pause is: PathRateLimit or PathAuth
	admitted bool          // the attempt has begun (the caller calls finish once it has ended)
	refused  bool          // the destination refuses our credentials
	changed  <-chan struct{}
}

// tryBegin begins an attempt of id when every policy lets it, and else says what it waits
// for. (id 0 is no lease: the gate's policies alone, as a test drives them.)
func (g *gate) tryBegin(id uint64) verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	head := id == 0 || g.slots.head(id)
	wait, path, ok := g.hold.check(now, head)
	v := verdict{pause: wait, path: path, refused: g.hold.auth.on, changed: g.changed}
	if !ok || wait > 0 {
		return v
	}
	if wait, ok := g.brk.allow(now, g.slots.sending); !ok {
		if wait > 0 {
			v.pause, v.path = wait, PathBackoff
		}
		return v
	}
	if id != 0 && !g.ranked(id) {
		return v
	}
	g.slots.begin(id)
	g.brk.begin()
	v.admitted = true
	return v
}

// finish records the end of an attempt begun with tryBegin, what it answered (nil: the
// request was not made) and how long it took: the breaker and the limit learn from it.
func (g *gate) finish(id uint64, o *delivery.Outcome, rtt time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sent := g.slots.end(id)
	now := g.clock.Now()
	h := healthNone
	if o != nil {
		h = healthOf(*o)
		g.limiter().Observe(sample{answer: answerOf(*o), rtt: rtt, inflight: len(g.slots.live), now: now,
			sent: sent, latest: g.slots.attempt})
	}
	g.brk.observe(h, sent, g.slots.sending, now)
	g.notifyLocked()
}

// ranked reports whether id's place among the batches in flight lets it start. With acks in
// order (upload.concurrency: 1, or a destination that takes one batch at a time) only the
// oldest batch may, so a batch waiting out its backoff is overtaken by none. Otherwise its
// rank among the batches not waiting must be below the limit, except while the breaker is
// open: its one probe is the limit then, and may be any batch ready to go.
func (g *gate) ranked(id uint64) bool {
	switch {
	case g.fixed == 1 || g.bound == 1:
		return g.slots.head(id)
	case g.brk.open:
		return true
	}
	return g.slots.rank(id) < g.limitLocked()
}

// healthOf is what an outcome tells the breaker: a retryable failure may be an outage; any
// answer of the destination says it is up; a request not made says nothing.
func healthOf(o delivery.Outcome) health {
	switch o.Class {
	case delivery.ClassRetryable:
		return healthDown
	case delivery.ClassAborted:
		return healthNone
	}
	return healthUp
}

// admit waits until an attempt of l may start (see gate) and begins it: the caller calls finish once it has ended. It returns false when
// the worker must stop: Close's deadline passed, or after Close a pause that ends after it.
// The waiting spends no retry budget; held is how long l was held because our credentials
// were refused, which the caller keeps off the batch's budget clocks.
func (w *worker) admit(l *lease) (held time.Duration, ok bool) {
	id := l.seq
	var heldSince time.Time
	defer func() {
		if !heldSince.IsZero() {
			held = w.clock.Now().Sub(heldSince)
		}
	}()
	for {
		if w.runCtx.Err() != nil {
			return 0, false
		}
		v := w.gate.tryBegin(id)
		if v.refused && heldSince.IsZero() {
			heldSince = w.clock.Now()
		}
		switch {
		case v.admitted:
			return 0, true
		case v.pause > 0:
			if !w.pauseWait(v.pause, v.path, v.changed) {
				return 0, false
			}
		case v.refused && w.stopping():
			return 0, false // only the head probes, and Close does not wait for the next probe
		default:
			select {
			case <-v.changed:
			case <-w.runCtx.Done():
				return 0, false
			}
		}
	}
}

// pauseWait waits out a client-wide pause (or until the gate changes): a Retry-After
// (PathRateLimit) or the time to the next probe of refused credentials (PathAuth). After
// Close it waits only when the pause ends before Close's deadline.
func (w *worker) pauseWait(d time.Duration, path string, changed <-chan struct{}) bool {
	if w.stopping() {
		// Context deadlines are real time, whatever the clock (as budget.Sleep compares them).
		if dl, ok := w.closeCtx.Deadline(); ok && d > time.Until(dl) {
			w.log.Info("client-wide pause not over before the close deadline; batch left on disk", "path", path, "wait_left", d.String())
			return false
		}
	}
	until := w.clock.Now().Add(d)
	w.board.set(func(s *workerState) {
		s.Waiting++
		if s.Path == PathNone {
			s.Path, s.WaitingUntil, s.WaitErr = path, until, nil
		}
	})
	defer w.board.set(func(s *workerState) {
		s.Waiting--
		if s.Path == path && s.WaitingUntil.Equal(until) {
			s.Path, s.WaitingUntil, s.WaitErr = PathNone, time.Time{}, nil
		}
	})
	// Close wakes the wait, so that a pause that outlasts its deadline is given up at once.
	ctx, cancel := context.WithCancel(w.runCtx)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := budget.Sleep(ctx, w.clock, d, changed)
	return err == nil || errors.Is(err, budget.ErrWoken) || w.runCtx.Err() == nil
}
