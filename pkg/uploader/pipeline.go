package uploader

import (
	"errors"

	"github.com/outboxhq/outbox/pkg/queue"
)

// prepared is a leased batch, with its payload when the destination built it ahead of its
// first attempt.
type prepared struct {
	b       *queue.Batch
	more    bool  // at least one event followed b when it was leased
	payload any   // nil when not built ahead; owned by whoever holds the prepared
	err     error // the lease failed
}

// releasePayload returns p's payload built ahead, if any, to the destination.
func (w *worker) releasePayload(p prepared) {
	if p.payload != nil && w.prep != nil {
		w.prep.Release(p.payload)
	}
}

// prefetch leases and prepares the batch after the one in flight, on its own goroutine, so that
// its read transaction and its payload (the HTTP body and its gzip) overlap with the request in flight. It is awaited (wait or
// discard) before the worker uses the store again from the head or returns.
type prefetch struct {
	done chan struct{}
	p    prepared
}

// startPrefetch starts leasing and preparing the batch that follows after.
func (w *worker) startPrefetch(after *queue.Batch) *prefetch {
	f := &prefetch{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		s := w.settings()
		b, more, err := w.q.LeaseAfter(after, s.batch.MaxEvents, s.leaseBytes)
		f.p = prepared{b: b, more: more, err: err}
		if err != nil || b == nil || len(b.Events) == 0 || w.prep == nil {
			return
		}
		f.p.payload = w.prep.Prepare(b.Events)
	}()
	return f
}

// wait returns the prepared batch once the prefetch has finished.
func (f *prefetch) wait() prepared {
	<-f.done
	return f.p
}

// discard waits for a prefetch and drops what it prepared.
func (w *worker) discard(f *prefetch) {
	w.releasePayload(f.wait())
}

// dueNext reports whether the prepared batch that follows a delivered one may be sent at once:
// it is what waitDue would decide had the worker gone back to the head (the queue held
// batch.max_events or batch.max_bytes after the delivered batch, a Flush, or Close). A
// smaller tail batch goes back through waitDue, which knows the interval.
func (w *worker) dueNext(p prepared, s *settings) bool {
	if p.b == nil || len(p.b.Events) == 0 {
		return false
	}
	return p.more || len(p.b.Events) >= s.batch.MaxEvents || p.b.Bytes >= s.leaseBytes ||
		w.stopping() || w.flushing.Load() > 0
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
func (w *worker) startAcker() {
	w.ackr = &acker{in: make(chan *pendingAck, maxPendingAcks), stopped: make(chan struct{})}
	go w.ackLoop(w.ackr)
}

func (w *worker) stopAcker() {
	close(w.ackr.in)
	<-w.ackr.stopped
}

func (w *worker) ackLoop(a *acker) {
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
		if w.ackFault != nil {
			err = w.ackFault()
		}
		if err == nil {
			err = w.q.AckAll(bs...)
		}
		for _, p := range group {
			if err == nil {
				w.delivered(p.info)
			}
			p.done <- err
		}
	}
}

// delivered books a batch whose ack has committed: counters, the info log line and
// OnDelivered. It runs on the acker goroutine as soon as the ack commits, in delivery order,
// so status, metrics and the log follow delivery instead of the worker's next settle point.
func (w *worker) delivered(info BatchInfo) {
	w.board.count(func(c *Counters) {
		c.EventsUploaded += int64(info.Events)
		c.BatchesUploaded++
	})
	w.log.Info("batch delivered", "events", info.Events, "bytes", info.Bytes, "attempts", info.Attempts, "code", info.Code)
	if w.hooks.OnDelivered != nil {
		w.hooks.OnDelivered(info)
	}
}

// startAck hands a delivered batch's ack to the acker. When maxPendingAcks are outstanding it
// first settles the oldest; it returns an ack's error as settle does (b's ack is then not
// started).
func (w *worker) startAck(b *queue.Batch, info BatchInfo) error {
	if len(w.acks) >= maxPendingAcks {
		if _, err := w.settleOne(true); err != nil {
			return errors.Join(err, w.settle())
		}
	}
	p := &pendingAck{b: b, info: info, done: make(chan error, 1)}
	w.acks = append(w.acks, p)
	w.ackr.in <- p
	return nil
}

// settle waits for every outstanding ack; the acker has booked each one that committed
// (counters, the info log line, OnDelivered: see delivered) before the worker sees it
// settled. It returns the first ack error: that
// batch is still in the queue, so whatever was sent after it must be sent again from the
// head (duplicates the collector dedupes by messageId, never a loss). The worker settles
// before it routes a failed attempt's outcome (so before any SaveRetry, DeadLetter or split),
// before leasing from the head, before going idle, and before it returns.
func (w *worker) settle() error {
	var first error
	for len(w.acks) > 0 {
		if _, err := w.settleOne(true); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// settleReady drops the acks that have already committed from the outstanding ones, without
// waiting; on an ack error it settles them all and returns it.
func (w *worker) settleReady() error {
	for len(w.acks) > 0 {
		done, err := w.settleOne(false)
		if err != nil {
			return errors.Join(err, w.settle())
		}
		if !done {
			return nil
		}
	}
	return nil
}

// settleOne settles the oldest outstanding ack, waiting for it when wait is set. done is false
// when it has not committed yet (and wait is not set).
func (w *worker) settleOne(wait bool) (done bool, err error) {
	p := w.acks[0]
	if wait {
		err = <-p.done
	} else {
		select {
		case err = <-p.done:
		default:
			return false, nil
		}
	}
	w.acks[0] = nil
	w.acks = w.acks[1:]
	if err != nil {
		w.log.Error("ack a delivered batch; it will be sent again", "events", p.info.Events, "error", err)
		return true, err
	}
	return true, nil
}
