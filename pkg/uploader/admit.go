package uploader

import (
	"context"
	"errors"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// The worker's side of the gate: a batch's goroutine asks the gate before every attempt and
// waits, spending no retry budget, for what it says (a hold's pause, the probe schedule, a
// change of the gate), or gives up when Close's deadline leaves no time for it.

// What admit says of an attempt.
const (
	admitted   = iota // the attempt has begun: the caller calls finish once it has ended
	admitStop         // the worker must stop: Close's deadline passed
	admitLeave        // after Close, the batch's source is held past Close's deadline (or until a
	// probe Close does not wait for): the batch stays queued and the worker goes on with the
	// other sources
)

// admit waits until an attempt of l may start (see gate) and begins it. The waiting spends
// no retry budget; held is how long l was held because our credentials were refused, which
// the caller keeps off the batch's budget clocks.
func (w *worker) admit(l *lease) (held time.Duration, kind int) {
	id := l.seq
	var heldSince time.Time
	defer func() {
		if !heldSince.IsZero() {
			held = w.clock.Now().Sub(heldSince)
		}
	}()
	for {
		if w.runCtx.Err() != nil {
			return 0, admitStop
		}
		v := w.gate.tryBegin(id)
		if v.refused && heldSince.IsZero() {
			heldSince = w.clock.Now()
		}
		switch {
		case v.admitted:
			return 0, admitted
		case v.pause > 0:
			if !w.pauseWait(v.pause, v.path, v.changed) {
				if w.runCtx.Err() != nil {
					return 0, admitStop
				}
				return 0, admitLeave
			}
		case v.refused && w.stopping():
			return 0, admitLeave // only the head probes, and Close does not wait for the next probe
		default:
			select {
			case <-v.changed:
			case <-w.runCtx.Done():
				return 0, admitStop
			}
		}
	}
}

// pauseWait waits out a pause of the batch's source (or until the gate changes): a
// Retry-After (PathRateLimit) or the time to the next probe of refused credentials
// (PathAuth). After Close it waits only when the pause ends before Close's deadline.
func (w *worker) pauseWait(d time.Duration, path string, changed <-chan struct{}) bool {
	if w.stopping() {
		// Context deadlines are real time, whatever the clock (as budget.Sleep compares them).
		if dl, ok := w.closeCtx.Deadline(); ok && d > time.Until(dl) {
			w.log.Info("source on hold past the close deadline; batch left on disk", "path", path, "wait_left", d.String())
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
