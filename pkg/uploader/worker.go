package uploader

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// worker is the consumer side of the queue: the one goroutine that leases batches from the
// head, sends them to the destination, waits as the retry budgets say, splits, dead-letters
// and acks (with several batches in flight it leases and dispatches, and each lease is carried
// on a goroutine of its own: inflight.go). The Client starts it at Open and stops it at Close; everything else it shares
// with the Client goes through the board (state and counters, for Stats and Flush).
type worker struct {
	q     *queue.Queue
	dest  Destination
	prep  PreparingDestination // dest, when it builds payloads ahead; else nil
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

	gate *gate // admits every attempt (gate.go): the batches in flight, client-wide pauses
	// oneAtATime: the destination takes one batch at a time (no BoundedDestination), so the
	// FIFO loop runs whatever upload.concurrency says.
	oneAtATime bool

	forgets forgetGate // holds sends while Client.Forget runs (forget.go)

	ackr     *acker        // commits the acks (pipeline.go)
	acks     []*pendingAck // outstanding acks, oldest first; worker goroutine only
	ackFault func() error  // options.ackFault
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

// run drives delivery until the worker must exit: the FIFO loop (runSerial) while batches go
// one at a time, the dispatcher of several in flight (runLeases) otherwise. Each returns, with
// nothing in flight, when a Reconfigure of upload.concurrency moves the worker to the other.
func (w *worker) run() {
	defer close(w.done)
	for {
		run := w.runLeases
		if w.serial() {
			run = w.runSerial
		}
		if !run() {
			return
		}
	}
}

// runSerial waits until a batch is due, leases it from the head, and drains from there (see
// drain): each batch is delivered (with its retries, splits and dead letters) before the next
// is sent, while the next one is leased and encoded beside it. It returns false when Close was
// called and either the queue is empty, a wait would outlast Close's deadline, or that
// deadline passed; true when batches are to go several at a time from now on.
func (w *worker) runSerial() bool {
	w.startAcker()
	defer w.stopAcker()
	defer func() { _ = w.settle() }() // an ack failure is logged; the batch stays queued
	var bud *budget.Budget
	var budFor budget.Config
	for {
		if !w.waitDue() {
			return false
		}
		s := w.settings()
		if !w.serial() {
			return true
		}
		if bud == nil || s.retry != budFor {
			bud, budFor = budget.New(s.retry, w.clock, w.rand), s.retry
		}
		b, err := w.q.Lease(s.batch.MaxEvents, s.leaseBytes)
		if err != nil {
			w.log.Error("lease a batch", "error", err)
			if !w.pause(err) {
				return false
			}
			continue
		}
		if b == nil || len(b.Events) == 0 {
			continue
		}
		ok := w.drain(prepared{b: b}, bud, s)
		err = w.settle()
		w.board.set(func(s *workerState) { s.Busy = false; s.Attempt = 0 })
		if !ok || (err != nil && !w.pause(err)) {
			return false
		}
	}
}

// drain delivers p's batch and goes on with the batches after it while they are due. While a
// batch is being delivered, the next one is leased (queue.LeaseAfter) and prepared beside it;
// it is sent only once the batch before it has left the queue (acked, or dead-lettered) or
// has been accepted with its ack still committing (see settle), so deliveries stay in FIFO
// order and one batch at most is in flight. drain returns with the last ack possibly
// outstanding, true to go back to the head (the next batch is not due, the live settings s it
// began with were replaced, or an ack failed and the queue must be read again from its true
// head), false when the worker must exit.
func (w *worker) drain(p prepared, bud *budget.Budget, s *settings) bool {
	w.board.set(func(s *workerState) { s.Busy = true })
	for {
		next := w.startPrefetch(p.b)
		kind := w.deliver(p, bud)
		if kind != nextDone {
			w.discard(next)
			return kind == nextRestart
		}
		n := next.wait()
		// Every part of p's batch has been sent and has left the queue (or its ack is
		// committing, which needs only its keys), and the lease after it is done: nothing
		// reads its events any more (a destination holds none past Send).
		p.b.Release()
		if n.err != nil {
			w.log.Warn("lease the next batch; going back to the head", "error", n.err)
		}
		if n.err != nil || w.settings() != s || !w.dueNext(n, s) {
			// New settings: the next batch is leased again from the head with them.
			w.releasePayload(n)
			return true
		}
		p = n
	}
}

// waitDue blocks until a batch is due: the queue holds batch.max_events or batch.max_bytes,
// the oldest event is batch.interval old, a Flush is in progress, or Close was called. It
// returns false when the worker should exit (Close was called and the queue is empty).
func (w *worker) waitDue() bool {
	timerFired := false
	for {
		events, bytes, oldest := w.q.Pending()
		if events == 0 {
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

// deliver sends p's batch until it and every part of it split off have left the queue (acked
// or dead-lettered; the last ack may still be committing): nextDone, or nextRestart (an ack
// failed: go back to the head) or nextStop (the worker must exit, leaving the rest on disk).
// Its payload built ahead, if any, serves its first attempt.
func (w *worker) deliver(p prepared, bud *budget.Budget) int {
	work := []*queue.Batch{p.b}
	pre := p.payload
	for len(work) > 0 {
		cur := work[0]
		bud.Restore(cur.Retry)
		w.board.set(func(s *workerState) { s.Attempt = bud.Attempts() })
		parts, kind := w.attemptUntilDone(cur, bud, pre, nil)
		pre = nil
		bud.Reset()
		if kind != nextDone {
			return kind
		}
		work = append(parts, work[1:]...)
	}
	return nextDone
}

// attemptUntilDone sends one batch, waiting between attempts as its budget says, until it
// leaves the queue (nil parts) or is split (its two halves, to be sent in order). pre, when not
// nil, is a payload built ahead for the first attempt. Every attempt first passes the gate;
// l, with several batches in flight, is the lease b belongs to (nil: the one batch).
func (w *worker) attemptUntilDone(b *queue.Batch, bud *budget.Budget, pre any, l *lease) (parts []*queue.Batch, kind int) {
	first := w.clock.Now()
	for {
		held, ok := w.admit(l)
		if !ok {
			return nil, nextStop
		}
		bud.Postpone(held) // time held on refused credentials is not the batch's failure
		next := w.attempt(b, bud, first, pre, l != nil)
		if l != nil {
			w.gate.end()
		}
		pre = nil
		switch next.kind {
		case nextDone:
			return nil, nextDone
		case nextSplit:
			h1, h2 := b.Split()
			return []*queue.Batch{h1, h2}, nextDone
		case nextWait:
			if l != nil {
				w.gate.setWaiting(l, true) // the other batches go on meanwhile
			}
			ok := w.retryWait(next)
			if l != nil {
				w.gate.setWaiting(l, false)
			}
			if !ok {
				return nil, nextStop
			}
		case nextPause:
			if !w.pause(next.err) {
				return nil, nextStop
			}
		case nextRestart:
			if !w.pause(next.err) {
				return nil, nextStop
			}
			return nil, nextRestart
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

// stopping reports whether Close was called.
func (w *worker) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}
