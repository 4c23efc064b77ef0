package uploader

import (
	"time"

	"github.com/outboxhq/outbox/pkg/queue"
)

// bodyMaxAge is how old a body built ahead of its first attempt may be and still be sent: its
// sentAt is the time it was built, and a collector corrects event timestamps with it. Older
// bodies (and every retry, which follows a wait) are built again.
const bodyMaxAge = time.Second

// prepared is a leased batch, with its body when it was built ahead of its first attempt.
type prepared struct {
	b    *queue.Batch
	more bool  // at least one event followed b when it was leased
	body *body // nil when not built ahead; owned by whoever holds the prepared
	err  error // the lease failed
}

// release returns the body built ahead, if any, to the pools.
func (p *prepared) release() {
	if p.body != nil {
		p.body.Release()
		p.body = nil
	}
}

// prefetch leases and encodes the batch after the one in flight, on its own goroutine, so that
// its read transaction and its gzip overlap with the request in flight. It is awaited (wait or
// discard) before the worker uses the store again from the head or returns.
type prefetch struct {
	done chan struct{}
	p    prepared
}

// startPrefetch starts leasing and encoding the batch that follows after.
func (c *Client) startPrefetch(after *queue.Batch) *prefetch {
	f := &prefetch{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		b, more, err := c.q.LeaseAfter(after, c.cfg.Batch.MaxEvents, c.leaseBytes)
		f.p = prepared{b: b, more: more, err: err}
		if err != nil || b == nil || len(b.Events) == 0 {
			return
		}
		// An encode error leaves body nil: the attempt encodes again and reports it.
		f.p.body, _ = c.enc.encode(b.Events, c.now())
	}()
	return f
}

// wait returns the prepared batch once the prefetch has finished.
func (f *prefetch) wait() prepared {
	<-f.done
	return f.p
}

// discard waits for the prefetch and drops what it prepared.
func (f *prefetch) discard() {
	p := f.wait()
	p.release()
}

// dueNext reports whether the prepared batch that follows a delivered one may be sent at once:
// it is what waitDue would decide had the worker gone back to the head (the queue held
// batch.max_events or batch.max_bytes after the delivered batch, a Flush, or Close). A
// smaller tail batch goes back through waitDue, which knows the interval.
func (c *Client) dueNext(p prepared) bool {
	if p.b == nil || len(p.b.Events) == 0 {
		return false
	}
	return p.more || len(p.b.Events) >= c.cfg.Batch.MaxEvents || p.b.Bytes >= c.leaseBytes ||
		c.stopping() || c.flushing.Load() > 0
}

// bodyFor returns the body of an attempt of events: pre, when it was built ahead less than
// bodyMaxAge ago, else a new one (pre is released).
func (c *Client) bodyFor(events [][]byte, pre *body) (*body, error) {
	now := c.now()
	if pre != nil {
		if age := now.Sub(pre.sentAt); age >= 0 && age <= bodyMaxAge {
			return pre, nil
		}
		pre.Release()
	}
	return c.enc.encode(events, now)
}

// pendingAck is the acknowledgement of a delivered batch, committing beside the worker while
// it sends the next batch. At most one is outstanding (Client.acking).
type pendingAck struct {
	info BatchInfo
	done chan error // buffered 1
}

// startAck starts acknowledging b. The worker must settle the previous ack first.
func (c *Client) startAck(b *queue.Batch, info BatchInfo) {
	a := &pendingAck{info: info, done: make(chan error, 1)}
	go func() { a.done <- c.q.Ack(b) }()
	c.acking = a
}

// settle waits for the outstanding ack, if any, and books it: counters, the info log line
// and OnDelivered, on the worker goroutine. It returns the ack's error: that batch is still at
// the head of the queue, so whatever was sent after it must be sent again from it (a
// duplicate the collector dedupes by messageId, never a loss). The worker settles before it
// routes an attempt's outcome (so before any SaveRetry, DeadLetter or split of the next
// batch), before leasing from the head, before going idle, and before it returns.
func (c *Client) settle() error {
	a := c.acking
	if a == nil {
		return nil
	}
	c.acking = nil
	if err := <-a.done; err != nil {
		c.log.Error("ack a delivered batch; it will be sent again", "error", err)
		return err
	}
	info := a.info
	c.mu.Lock()
	c.counters.EventsUploaded += int64(info.Events)
	c.counters.BatchesUploaded++
	c.mu.Unlock()
	c.log.Info("batch delivered", "events", info.Events, "bytes", info.Bytes, "attempts", info.Attempts, "status", info.Status)
	if c.hooks.OnDelivered != nil {
		c.hooks.OnDelivered(info)
	}
	return nil
}
