package uploader

import (
	"errors"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// run is the worker: the one goroutine that owns the consumer side of the queue. It waits
// until a batch is due, leases it, and delivers it (with its retries, splits and dead
// letters) before leasing the next. It returns when Close was called and either the queue is
// empty, a wait would outlast Close's deadline, or that deadline passed.
func (c *Client) run() {
	defer close(c.done)
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
		if !c.deliver(b, bud) {
			return
		}
	}
}

// waitDue blocks until a batch is due: the queue holds batch.max_events or batch.max_bytes,
// the oldest event is batch.interval old, a Flush is in progress, or Close was called. It
// returns false when the worker should exit (Close was called and the queue is empty).
func (c *Client) waitDue() bool {
	timerFired := false
	for {
		qs := c.q.Stats()
		if qs.Events == 0 {
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
			qs.Events >= int64(c.cfg.Batch.MaxEvents) || qs.Bytes >= int64(c.leaseBytes) {
			return true
		}
		// The queue stamps intake times with the client's clock, so the age is on it too.
		wait := c.cfg.Batch.Interval
		if !qs.Oldest.IsZero() {
			wait = min(max(c.cfg.Batch.Interval-c.now().Sub(qs.Oldest), 0), c.cfg.Batch.Interval)
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

// deliver sends b until it and every part of it split off have left the queue (acked or
// dead-lettered). It returns false when the worker must exit, leaving what is left on disk.
func (c *Client) deliver(b *queue.Batch, bud *budget.Budget) bool {
	c.setState(func(s *workerState) { s.Busy = true })
	defer c.setState(func(s *workerState) { s.Busy = false; s.Attempt = 0 })
	work := []*queue.Batch{b}
	for len(work) > 0 {
		cur := work[0]
		bud.Restore(fromQueueState(cur.Retry))
		c.setState(func(s *workerState) { s.Attempt = bud.Attempts() })
		next, ok := c.attemptUntilDone(cur, bud)
		bud.Reset()
		if !ok {
			return false
		}
		work = append(next, work[1:]...)
	}
	return true
}

// attemptUntilDone sends one batch, waiting between attempts as its budget says, until it
// leaves the queue (nil parts) or is split (its two halves, to be sent in order). ok is false
// when the worker must exit.
func (c *Client) attemptUntilDone(b *queue.Batch, bud *budget.Budget) (parts []*queue.Batch, ok bool) {
	t := &tracker{first: c.now()}
	for {
		act := c.attempt(b, bud, t)
		switch act.kind {
		case actDone:
			return nil, true
		case actSplit:
			h1, h2 := b.Split()
			return []*queue.Batch{h1, h2}, true
		case actWait:
			if !c.retryWait(act) {
				return nil, false
			}
		case actPause:
			if !c.pause(act.err) {
				return nil, false
			}
		case actStop:
			return nil, false
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
