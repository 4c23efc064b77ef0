package uploader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// gate decides when the batches in flight may make an attempt, with several in flight
// (upload.concurrency other than 1). A batch may start an attempt when fewer than the limit
// of the batches leased before it are ready to send (its rank among the leases not waiting
// out a retry wait is below the limit: when the limit shrinks, the oldest batches go on and
// the newest wait, unsent and spending nothing, while a batch in its backoff holds up no
// other), and no usable Retry-After is running: a Retry-After is about this client, so it
// pauses every new attempt, of every batch, until the latest such deadline. During an outage
// (limiter.outage) one lease attempts, the first ready to, until a success or until it leaves
// flight, paced as the one batch of upload.concurrency: 1 would be (limiter.probeAt), so an
// outage costs what one batch in flight costs. The limit is fixed (upload.concurrency: N) or
// the limiter's (auto), and never above the destination's own bound. A batch waiting out a
// backoff of its own sends nothing, so its place goes to the next batch: at most twice the
// most that may be in flight (upload.concurrency, or upload.max_concurrency under auto) are
// leased at once, and the waiting ones hold their events in memory meanwhile. While the
// destination refuses our credentials (authpause.go) the only attempt is the head lease's
// probe, once per probe period.
//
// With one batch at a time (upload.concurrency: 1) the gate holds no leases: it is only the
// client-wide pause on refused credentials, which the worker's one batch passes as the head.
type gate struct {
	mu      sync.Mutex
	fixed   int             // upload.concurrency as a number; 0 for auto (setFixed changes it)
	bound   int             // the destination's own bound; 0 for none
	lim     *limiter        // auto's limit; kept while fixed, so that auto can come back
	live    []uint64        // sequence numbers of the leases in flight, oldest first
	waiting map[uint64]bool // leases waiting out a retry wait of their own
	probe   uint64          // during an outage, the one lease that attempts; 0 for none yet
	sending int             // leases whose admitted attempt has not ended yet
	seq     uint64
	until   time.Time     // no attempt starts before it (Retry-After)
	auth    authState     // a pause on refused credentials (authpause.go)
	changed chan struct{} // closed and replaced on every change
	clock   budget.Clock
}

// lease is one batch in flight under the gate.
type lease struct {
	seq   uint64
	b     *queue.Batch
	tried bool // an attempt of it was admitted (guarded by the gate's mu)
}

func newGate(cfg UploadConfig, bound int, clock budget.Clock) *gate {
	return &gate{fixed: cfg.fixedConcurrency(), bound: bound, changed: make(chan struct{}), clock: clock,
		waiting: map[uint64]bool{}, lim: newLimiter(cfg.MaxConcurrency)}
}

// setFixed changes upload.concurrency (0: auto). Leases in flight above a smaller limit finish
// the attempt they are in and wait for their rank before the next; switching back to auto
// resumes its limiter where it was.
func (g *gate) setFixed(fixed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fixed != fixed {
		g.fixed = fixed
		g.notifyLocked()
	}
}

// limit returns how many batches may be in flight now.
func (g *gate) limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limitLocked()
}

func (g *gate) limitLocked() int {
	n := g.fixed
	if n == 0 {
		n = g.lim.Limit()
	}
	if g.bound > 0 {
		n = min(n, g.bound)
	}
	return max(n, 1)
}

// room reports whether the dispatcher may lease one more batch: fewer than twice the most that
// may be in flight are leased, and fewer than the limit are in flight (leased and not waiting
// out a retry wait of their own). Under auto, no new batch is leased
// while the last answer was a failure and a batch not waiting out a retry wait may still
// answer: its success would say the destination is up; without this rule each failure,
// freeing its place while it waits, would send a fresh batch into what may be an outage.
func (g *gate) room() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fixed == 0 && g.lim.failing() && len(g.live) > len(g.waiting) {
		return false
	}
	most := g.fixed
	if most == 0 {
		most = g.lim.ceil
	}
	if g.bound > 0 {
		most = min(most, g.bound)
	}
	return len(g.live) < 2*max(most, 1) && len(g.live)-len(g.waiting) < g.limitLocked()
}

// setWaiting marks l as waiting out a retry wait of its own (or no longer).
func (g *gate) setWaiting(l *lease, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if on {
		g.waiting[l.seq] = true
	} else {
		delete(g.waiting, l.seq)
	}
	g.notifyLocked()
}

// inFlight returns the number of leases in flight: leased and not waiting out a retry wait of
// their own.
func (g *gate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live) - len(g.waiting)
}

// add registers a newly leased batch, the newest in flight.
func (g *gate) add(b *queue.Batch) *lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.live = append(g.live, g.seq)
	g.notifyLocked()
	return &lease{seq: g.seq, b: b}
}

// remove unregisters a lease that has left flight (delivered, dead-lettered, or given up).
func (g *gate) remove(l *lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.live, l.seq); i >= 0 {
		g.live = slices.Delete(g.live, i, i+1)
	}
	delete(g.waiting, l.seq)
	if g.probe == l.seq {
		g.probe = 0
	}
	g.notifyLocked()
}

// pauseUntil holds every new attempt until t (a usable Retry-After); the latest deadline wins.
func (g *gate) pauseUntil(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.After(g.until) {
		g.until = t
		g.notifyLocked()
	}
}

// observe feeds an attempt's answer to the limiter (auto only).
func (g *gate) observe(a answer, rtt time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fixed != 0 {
		return
	}
	before := g.lim.Limit()
	g.lim.observe(a, rtt, len(g.live), g.clock.Now())
	if g.lim.Limit() != before {
		g.notifyLocked()
	}
}

func (g *gate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// verdict is what the gate says of one lease's next attempt.
type verdict struct {
	pause    time.Duration // wait this long first (0: none): a Retry-After, a probe's pace
	path     string        // what the pause is: PathRateLimit, PathAuth or PathBackoff
	admitted bool          // its rank lets it start (after the pause)
	refused  bool          // the destination refuses our credentials
	changed  <-chan struct{}
}

// state returns the verdict on l's next attempt, with the channel closed at the gate's next
// change; retry is the live retry settings, which pace an outage's probe. A nil l is the one
// batch of a worker with one batch at a time.
func (g *gate) state(l *lease, retry budget.Config) verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	v := verdict{pause: max(g.until.Sub(now), 0), path: PathRateLimit, admitted: true, changed: g.changed}
	if g.auth.on {
		v.refused, v.path = true, PathAuth
		if l != nil && (len(g.live) == 0 || g.live[0] != l.seq) {
			v.pause, v.admitted = 0, false // only the head probes
			return v
		}
		v.pause = max(v.pause, g.auth.probeAt.Sub(now))
		return v
	}
	if l == nil {
		return v
	}
	if g.fixed == 0 && g.lim.outage() {
		// One batch probes: the first that is ready to, and then only it until a success or
		// until it leaves flight, so no ready batch waits for the longest backoff among them;
		// its attempts are paced as one batch that failed as often as the destination has.
		if g.probe == 0 && !g.waiting[l.seq] {
			g.probe = l.seq
		}
		v.admitted = g.probe == l.seq
		if pace := g.lim.probeAt(retry).Sub(now); v.admitted && pace > v.pause {
			v.pause, v.path = pace, PathBackoff
		}
		return v
	}
	g.probe = 0
	if g.heldFirstLocked(l) {
		v.admitted = false
		return v
	}
	rank := 0
	for _, s := range g.live {
		if s == l.seq {
			break
		}
		if !g.waiting[s] {
			rank++
		}
	}
	v.admitted = rank < g.limitLocked()
	return v
}

// heldFirstLocked reports whether l's first attempt must wait: as a new lease waits (room), a
// batch not yet sent goes, while the last answer failed, only once no attempt is being sent
// that may say the destination is up, and then alone (begin). So the first round trip of an
// outage sends no more than what was already on the way, and after it one batch at a time.
func (g *gate) heldFirstLocked(l *lease) bool {
	return g.fixed == 0 && !l.tried && g.lim.failing() && g.sending > 0
}

// begin records that l's admitted attempt is being sent, unless its first attempt must wait
// after all (another lease's went first since state said yes): then it returns false, and
// admit waits for the gate's next change (that attempt's end) before asking again.
func (g *gate) begin(l *lease) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.heldFirstLocked(l) {
		return false
	}
	l.tried = true
	g.sending++
	return true
}

// end records that an attempt begun with begin has ended (its answer observed).
func (g *gate) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sending--
	g.notifyLocked()
}

// next returns the channel closed at the gate's next change.
func (g *gate) next() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// admit waits until l may start an attempt (see gate) and, for a lease, records the attempt
// as being sent (begin; the caller calls gate.end once it has ended). It returns false when
// the worker must stop: Close's deadline passed, or after Close a pause that ends after it.
// The waiting spends no retry budget; held is how long l was held because our credentials
// were refused, which the caller keeps off the batch's budget clocks.
func (w *worker) admit(l *lease) (held time.Duration, ok bool) {
	var heldSince time.Time
	defer func() {
		if !heldSince.IsZero() {
			held = w.clock.Now().Sub(heldSince)
		}
	}()
	for {
		v := w.gate.state(l, w.settings().retry)
		if v.refused && heldSince.IsZero() {
			heldSince = w.clock.Now()
		}
		switch {
		case w.runCtx.Err() != nil:
			return 0, false
		case v.pause > 0:
			if !w.pauseWait(v.pause, v.path, v.changed) {
				return 0, false
			}
		case v.admitted && (l == nil || w.gate.begin(l)):
			return 0, true
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
// (PathRateLimit), the time to the next probe of refused credentials (PathAuth) or of an
// outage (PathBackoff). After
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
