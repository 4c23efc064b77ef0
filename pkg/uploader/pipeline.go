package uploader

import (
	"errors"
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

// maxPendingAcks bounds the acks committing beside the worker. With fsync'd acks a commit can
// take longer than one request; the acks that wait meanwhile go into one transaction.
const maxPendingAcks = 8

// pendingAck is the acknowledgement of a delivered batch, committing beside the worker while
// it sends the next batches.
type pendingAck struct {
	b    *queue.Batch
	info BatchInfo
	done chan error // buffered 1
}

// acker commits the worker's acks in delivery order on its own goroutine, each time taking
// every ack waiting into one queue.AckAll (one transaction, one fsync).
type acker struct {
	in      chan *pendingAck // buffered maxPendingAcks: the worker never has more outstanding
	stopped chan struct{}
}

// startAcker starts the worker's acker; stopAcker ends it once every ack has been settled.
func (c *Client) startAcker() {
	c.ackr = &acker{in: make(chan *pendingAck, maxPendingAcks), stopped: make(chan struct{})}
	go c.ackLoop(c.ackr)
}

func (c *Client) stopAcker() {
	close(c.ackr.in)
	<-c.ackr.stopped
}

func (c *Client) ackLoop(a *acker) {
	defer close(a.stopped)
	for p := range a.in {
		group := []*pendingAck{p}
	gather:
		for len(group) < maxPendingAcks {
			select {
			case p, ok := <-a.in:
				if !ok {
					break gather
				}
				group = append(group, p)
			default:
				break gather
			}
		}
		bs := make([]*queue.Batch, len(group))
		for i, p := range group {
			bs[i] = p.b
		}
		var err error
		if c.ackFault != nil {
			err = c.ackFault()
		}
		if err == nil {
			err = c.q.AckAll(bs...)
		}
		for _, p := range group {
			if err == nil {
				c.delivered(p.info)
			}
			p.done <- err
		}
	}
}

// delivered books a batch whose ack has committed: counters, the info log line and
// OnDelivered. It runs on the acker goroutine as soon as the ack commits, in delivery order,
// so status, metrics and the log follow delivery instead of the worker's next settle point.
func (c *Client) delivered(info BatchInfo) {
	c.mu.Lock()
	c.counters.EventsUploaded += int64(info.Events)
	c.counters.BatchesUploaded++
	c.mu.Unlock()
	c.log.Info("batch delivered", "events", info.Events, "bytes", info.Bytes, "attempts", info.Attempts, "status", info.Status)
	if c.hooks.OnDelivered != nil {
		c.hooks.OnDelivered(info)
	}
}

// startAck hands a delivered batch's ack to the acker. When maxPendingAcks are outstanding it
// first settles the oldest; it returns an ack's error as settle does (b's ack is then not
// started).
func (c *Client) startAck(b *queue.Batch, info BatchInfo) error {
	if len(c.acks) >= maxPendingAcks {
		if _, err := c.settleOne(true); err != nil {
			return errors.Join(err, c.settle())
		}
	}
	p := &pendingAck{b: b, info: info, done: make(chan error, 1)}
	c.acks = append(c.acks, p)
	c.ackr.in <- p
	return nil
}

// settle waits for every outstanding ack; the acker has booked each one that committed
// (counters, the info log line, OnDelivered: see delivered) before the worker sees it
// settled. It returns the first ack error: that
// batch is still in the queue, so whatever was sent after it must be sent again from the
// head (duplicates the collector dedupes by messageId, never a loss). The worker settles
// before it routes a failed attempt's outcome (so before any SaveRetry, DeadLetter or split),
// before leasing from the head, before going idle, and before it returns.
func (c *Client) settle() error {
	var first error
	for len(c.acks) > 0 {
		if _, err := c.settleOne(true); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// settleReady drops the acks that have already committed from the outstanding ones, without
// waiting; on an ack error it settles them all and returns it.
func (c *Client) settleReady() error {
	for len(c.acks) > 0 {
		done, err := c.settleOne(false)
		if err != nil {
			return errors.Join(err, c.settle())
		}
		if !done {
			return nil
		}
	}
	return nil
}

// settleOne settles the oldest outstanding ack, waiting for it when wait is set. done is false
// when it has not committed yet (and wait is not set).
func (c *Client) settleOne(wait bool) (done bool, err error) {
	p := c.acks[0]
	if wait {
		err = <-p.done
	} else {
		select {
		case err = <-p.done:
		default:
			return false, nil
		}
	}
	c.acks[0] = nil
	c.acks = c.acks[1:]
	if err != nil {
		c.log.Error("ack a delivered batch; it will be sent again", "events", p.info.Events, "error", err)
		return true, err
	}
	return true, nil
}
