package uploader

import (
	"errors"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// run is the worker: the one goroutine that owns the consumer side of the queue. It waits
// until a batch is due, leases it from the head, and drains from there (see drain): each batch
// is delivered (with its retries, splits and dead letters) before the next is sent, while the
// next one is leased and encoded beside it. It returns when Close was called and either the
// queue is empty, a wait would outlast Close's deadline, or that deadline passed.
func (c *Client) run() {
	defer close(c.done)
	c.startAcker()
	defer c.stopAcker()
	defer func() { _ = c.settle() }() // an ack failure is logged; the batch stays queued
	bud := budget.New(c.cfg.Retry, c.clock, c.rand)
	for {
		if !c.waitDue() {
			return
		}
		b, err := c.q.Lease(c.cfg.Batch.MaxEvents, c.leaseBytes)
		if err != nil {
			c.log.Error("lease a batch", "error", err)
			if !c.pause(err) {
				return
			}
			continue
		}
		if b == nil || len(b.Events) == 0 {
			continue
		}
		ok := c.drain(prepared{b: b}, bud)
		err = c.settle()
		c.setState(func(s *workerState) { s.Busy = false; s.Attempt = 0 })
		if !ok || (err != nil && !c.pause(err)) {
			return
		}
	}
}

// drain delivers p's batch and goes on with the batches after it while they are due. While a
// batch is being delivered, the next one is leased (queue.LeaseAfter) and encoded beside it;
// it is sent only once the batch before it has left the queue (acked, or dead-lettered) or
// has been accepted with its ack still committing (see settle), so deliveries stay in FIFO
// order and one batch at most is in flight. drain returns with the last ack possibly
// outstanding, true to go back to the head (the next batch is not due, or an ack failed and
// the queue must be read again from its true head), false when the worker must exit.
func (c *Client) drain(p prepared, bud *budget.Budget) bool {
	c.setState(func(s *workerState) { s.Busy = true })
	for {
		next := c.startPrefetch(p.b)
		res := c.deliver(p, bud)
		if res != resDone {
			next.discard()
			return res == resRestart
		}
		n := next.wait()
		if n.err != nil {
			c.log.Warn("lease the next batch; going back to the head", "error", n.err)
		}
		if n.err != nil || !c.dueNext(n) {
			n.release()
			return true
		}
		p = n
	}
}

// waitDue blocks until a batch is due: the queue holds batch.max_events or batch.max_bytes,
// the oldest event is batch.interval old, a Flush is in progress, or Close was called. It
// returns false when the worker should exit (Close was called and the queue is empty).
func (c *Client) waitDue() bool {
	timerFired := false
	for {
		events, bytes, oldest := c.q.Pending()
		if events == 0 {
			if c.stopping() {
				return false
			}
			timerFired = false
			select { // idle: no timer, so a fake clock is not moved
			case <-c.wake:
			case <-c.stop:
			}
			continue
		}
		if timerFired || c.stopping() || c.flushing.Load() > 0 ||
			events >= int64(c.cfg.Batch.MaxEvents) || bytes >= int64(c.leaseBytes) {
			return true
		}
		// The queue stamps intake times with the client's clock, so the age is on it too.
		wait := c.cfg.Batch.Interval
		if !oldest.IsZero() {
			wait = min(max(c.cfg.Batch.Interval-c.now().Sub(oldest), 0), c.cfg.Batch.Interval)
		}
		if wait == 0 {
			return true
		}
		switch err := budget.Sleep(c.runCtx, c.clock, wait, c.wake); {
		case err == nil:
			timerFired = true
		case errors.Is(err, budget.ErrWoken):
		default: // runCtx cancelled: Close's deadline passed
			return false
		}
	}
}

// What deliver and attemptUntilDone tell the worker.
const (
	resDone    = iota // the batch and its parts left the queue (or their acks are committing)
	resRestart        // an ack failed: go back to the head of the queue
	resStop           // the worker must exit, leaving what is left on disk
)

// deliver sends p's batch until it and every part of it split off have left the queue (acked
// or dead-lettered; the last ack may still be committing). Its body built ahead, if any, serves
// its first attempt.
func (c *Client) deliver(p prepared, bud *budget.Budget) int {
	work := []*queue.Batch{p.b}
	pre := p.body
	for len(work) > 0 {
		cur := work[0]
		bud.Restore(fromQueueState(cur.Retry))
		c.setState(func(s *workerState) { s.Attempt = bud.Attempts() })
		next, res := c.attemptUntilDone(cur, bud, pre)
		pre = nil
		bud.Reset()
		if res != resDone {
			return res
		}
		work = append(next, work[1:]...)
	}
	return resDone
}

// attemptUntilDone sends one batch, waiting between attempts as its budget says, until it
// leaves the queue (nil parts) or is split (its two halves, to be sent in order). pre, when not
// nil, is a body built ahead for the first attempt.
func (c *Client) attemptUntilDone(b *queue.Batch, bud *budget.Budget, pre *body) (parts []*queue.Batch, res int) {
	t := &tracker{first: c.now()}
	for {
		act := c.attempt(b, bud, t, pre)
		pre = nil
		switch act.kind {
		case actDone:
			return nil, resDone
		case actSplit:
			h1, h2 := b.Split()
			return []*queue.Batch{h1, h2}, resDone
		case actWait:
			if !c.retryWait(act) {
				return nil, resStop
			}
		case actPause:
			if !c.pause(act.err) {
				return nil, resStop
			}
		case actRestart:
			if !c.pause(act.err) {
				return nil, resStop
			}
			return nil, resRestart
		case actStop:
			return nil, resStop
		}
	}
}

// tracker keeps what a dead letter needs across a batch's attempts.
type tracker struct {
	first time.Time
}

// pause holds the worker after a failure that is neither the collector's nor the network's
// (a request hook error, a configuration error, a store error): no budget is spent, the batch
// stays queued, and the worker tries again after batch.interval, at once after Close (to exit).
func (c *Client) pause(err error) bool {
	c.setState(func(s *workerState) { s.Paused = err })
	defer c.setState(func(s *workerState) { s.Paused = nil })
	if c.stopping() {
		return false
	}
	return budget.Sleep(c.runCtx, c.clock, c.cfg.Batch.Interval, c.stop) == nil
}

// retryWait waits before the next attempt of the head batch. After Close it waits only what
// is left of the wait, and only when that ends before Close's deadline; otherwise the worker
// exits and the batch stays on disk with its retry state.
func (c *Client) retryWait(a action) bool {
	until := c.now().Add(a.wait)
	c.setState(func(s *workerState) {
		s.Path, s.WaitingUntil, s.WaitErr = a.path, until, a.err
	})
	defer c.setState(func(s *workerState) { s.Path, s.WaitingUntil, s.WaitErr = PathNone, time.Time{}, nil })
	if !c.stopping() {
		err := budget.Sleep(c.runCtx, c.clock, a.wait, c.stop)
		if err == nil {
			return true
		}
		if !errors.Is(err, budget.ErrWoken) {
			return false
		}
	}
	left := until.Sub(c.now())
	err := budget.Sleep(c.shutdownCtx(), c.clock, left, nil)
	if err != nil {
		c.log.Info("retry wait not finished before the close deadline; batch left on disk",
			"path", a.path, "wait_left", left.String())
		return false
	}
	return c.runCtx.Err() == nil
}
