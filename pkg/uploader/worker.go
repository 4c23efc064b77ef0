package uploader

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// worker is the consumer side of the queue: the one goroutine that leases batches from the
// head and dispatches them (dispatch.go); each lease is carried on a goroutine of its own,
// which sends it to the destination, waits as the retry budgets say, splits, dead-letters and
// acks. The Client starts it at Open and stops it at Close; everything else it shares
// with the Client goes through the board (state and counters, for Stats and Flush).
type worker struct {
	q     *queue.Queue
	dest  delivery.Destination
	prep  delivery.PreparingDestination // dest, when it builds payloads ahead; else nil
	clock budget.Clock
	rand  budget.RandFunc
	log   *slog.Logger
	hooks Hooks
	board *board
	live  atomic.Pointer[settings] // the live settings (live.go); Reconfigure swaps them

	wake      chan struct{} // buffered 1: new events, Flush, Close → worker
	stop      chan struct{} // closed by stopWith
	done      chan struct{} // closed when run has returned
	closeCtx  context.Context
	runCtx    context.Context // cancelled at Close's deadline
	cancelRun context.CancelFunc
	flushing  atomic.Int32 // Flush calls in progress: ignore batch.interval

	gate    *gate    // admits every attempt (gate.go): the batches in flight, each source's holds
	sources *sources // the client's sources: the key to fix when one's credentials are refused

	forgets forgetGate // holds sends while Client.Forget runs (forget.go)

	ackFault func() error // options.ackFault
}

// start runs the worker and the forwarding of the queue's arrival signal until stopWith.
func (w *worker) start() {
	w.wake = make(chan struct{}, 1)
	w.stop = make(chan struct{})
	w.done = make(chan struct{})
	w.runCtx, w.cancelRun = context.WithCancel(context.Background())
	go w.forwardNotify()
	go w.run()
}

// stopWith asks the worker to drain and exit, within ctx: it cuts retry waits and pauses
// short at once, and the attempt in flight when ctx ends. It returns once the worker has.
func (w *worker) stopWith(ctx context.Context) {
	w.closeCtx = ctx // read by the worker only after it sees stop closed
	close(w.stop)
	w.signal()
	stopCancel := context.AfterFunc(ctx, w.cancelRun)
	defer stopCancel()
	<-w.done
	w.cancelRun()
}

// signal wakes the worker if it is idle or waiting for the batch interval.
func (w *worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// forwardNotify turns the queue's arrival signal (events enqueued by anyone, dead letters
// replayed) into wake-ups until stopWith.
func (w *worker) forwardNotify() {
	for {
		select {
		case <-w.q.Notify():
			w.signal()
		case <-w.stop:
			return
		}
	}
}

// run drives delivery until the worker must exit: it waits until a batch is due, then
// dispatches from the head (dispatch.go), in every mode: upload.concurrency: 1 is a limit of
// one with acks in order, not a loop of its own.
func (w *worker) run() {
	defer close(w.done)
	for {
		if !w.waitDue() {
			return
		}
		if !w.dispatch() {
			return
		}
	}
}

// waitDue blocks until a batch is due: the queue holds batch.max_events or batch.max_bytes,
// the oldest event is batch.interval old, a Flush is in progress, or Close was called. It
// returns false when the worker should exit (Close was called and the queue is empty).
func (w *worker) waitDue() bool {
	timerFired := false
	for {
		// The events of a source on hold are not due (isolation.go): they wait for its hold.
		held, heldUntil := w.gate.heldSources(w.stopping())
		events, bytes, oldest, heldQueued := w.pendingDue(held)
		if events == 0 {
			if heldQueued && !heldUntil.IsZero() {
				if !w.waitHeld(heldUntil) {
					return false
				}
				continue
			}
			if w.stopping() {
				return false
			}
			timerFired = false
			select { // idle: no timer, so a fake clock is not moved
			case <-w.wake:
			case <-w.stop:
			}
			continue
		}
		s := w.settings() // read anew after every wake-up: Reconfigure wakes the worker
		if timerFired || w.stopping() || w.flushing.Load() > 0 ||
			events >= int64(s.batch.MaxEvents) || bytes >= int64(s.leaseBytes) {
			return true
		}
		// The queue stamps intake times with the client's clock, so the age is on it too.
		wait := s.batch.Interval
		if !oldest.IsZero() {
			wait = min(max(s.batch.Interval-w.clock.Now().Sub(oldest), 0), s.batch.Interval)
		}
		if wait == 0 {
			return true
		}
		switch err := budget.Sleep(w.runCtx, w.clock, wait, w.wake); {
		case err == nil:
			timerFired = true
		case errors.Is(err, budget.ErrWoken):
		default: // runCtx cancelled: Close's deadline passed
			return false
		}
	}
}

// waitHeld waits, with nothing else due, until a source's Retry-After ends at until (or new
// events or Close wake the worker): Stats and Flush see the wait on the rate-limit path. After
// Close it returns false, leaving the events queued, when the hold outlasts Close's deadline.
func (w *worker) waitHeld(until time.Time) bool {
	d := until.Sub(w.clock.Now())
	if w.stopping() {
		// Context deadlines are real time, whatever the clock (as budget.Sleep compares them).
		if dl, ok := w.closeCtx.Deadline(); ok && d > time.Until(dl) {
			w.log.Info("source on hold past the close deadline; its events left on disk", "wait_left", d.String())
			return false
		}
	}
	w.board.set(func(s *workerState) {
		if s.Path == PathNone {
			s.Path, s.WaitingUntil, s.WaitErr = PathRateLimit, until, nil
		}
	})
	defer w.board.set(func(s *workerState) {
		if s.Path == PathRateLimit && s.WaitingUntil.Equal(until) {
			s.Path, s.WaitingUntil, s.WaitErr = PathNone, time.Time{}, nil
		}
	})
	err := budget.Sleep(w.runCtx, w.clock, d, w.wake)
	return err == nil || errors.Is(err, budget.ErrWoken)
}

// attemptUntilDone sends one batch of lease l, waiting between attempts as its budget says,
// until it leaves the queue (nil parts) or is split (its two halves, to be sent in order).
// pre, when not nil, is a payload built ahead for the first attempt. Every attempt first
// passes the gate.
func (w *worker) attemptUntilDone(b *queue.Lease, bud *budget.Budget, pre any, l *lease) (parts []*queue.Lease, kind int) {
	first := w.clock.Now()
	for {
		held, admit := w.admit(l)
		switch admit {
		case admitStop:
			w.releasePayload(pre)
			return nil, nextStop
		case admitLeave:
			w.releasePayload(pre)
			return nil, nextLeft
		}
		bud.Postpone(held) // time held on refused credentials is not the batch's failure
		next := w.attempt(b, bud, first, pre, l)
		pre = nil
		switch next.kind {
		case nextDone:
			return nil, nextDone
		case nextSplit:
			h1, h2 := b.Split()
			return []*queue.Lease{h1, h2}, nextDone
		case nextWait:
			w.gate.setWaiting(l, true) // the other batches go on meanwhile
			ok := w.retryWait(next)
			w.gate.setWaiting(l, false)
			if !ok {
				return nil, nextStop
			}
		case nextPause:
			if !w.pause(next.err) {
				return nil, nextStop
			}
		case nextRefused: // the gate holds the next attempt until a probe is due
		case nextStop:
			return nil, nextStop
		}
	}
}

// pause holds the worker after a failure that is neither the destination's nor the network's
// (a request hook error, a configuration error, a store error): no budget is spent, the batch
// stays queued, and the worker tries again after batch.interval, at once after Close (to exit).
func (w *worker) pause(err error) bool {
	w.board.set(func(s *workerState) { s.Paused = err })
	defer w.board.set(func(s *workerState) { s.Paused = nil })
	if w.stopping() {
		return false
	}
	return budget.Sleep(w.runCtx, w.clock, w.settings().batch.Interval, w.stop) == nil
}

// retryWait waits before the next attempt of the head batch. After Close it waits only what
// is left of the wait, and only when that ends before Close's deadline; otherwise the worker
// exits and the batch stays on disk with its retry state.
func (w *worker) retryWait(n next) bool {
	until := w.clock.Now().Add(n.wait)
	w.board.set(func(s *workerState) {
		s.Path, s.WaitingUntil, s.WaitErr = n.path, until, n.err
		s.Waiting++
	})
	defer w.board.set(func(s *workerState) {
		s.Waiting--
		if s.WaitingUntil.Equal(until) { // with several in flight, another batch's wait may have replaced this one
			s.Path, s.WaitingUntil, s.WaitErr = PathNone, time.Time{}, nil
		}
	})
	if !w.stopping() {
		err := budget.Sleep(w.runCtx, w.clock, n.wait, w.stop)
		if err == nil {
			return true
		}
		if !errors.Is(err, budget.ErrWoken) {
			return false
		}
	}
	left := until.Sub(w.clock.Now())
	if err := budget.Sleep(w.closeCtx, w.clock, left, nil); err != nil {
		w.log.Info("retry wait not finished before the close deadline; batch left on disk",
			"path", n.path, "wait_left", left.String())
		return false
	}
	return w.runCtx.Err() == nil
}

// storeCtx is the context of the worker's writes to the queue (an ack, a dead letter, a retry
// state): the worker's own, without its cancellation at Close's deadline, so that a batch the
// destination accepted just before it still leaves the queue (the store's writer bounds the
// commit on its own; Close waits for it).
func (w *worker) storeCtx() context.Context { return context.WithoutCancel(w.runCtx) }

// stopping reports whether Close was called.
func (w *worker) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}
