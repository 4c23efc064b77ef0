package uploader

import (
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/queue"
)

// destinationBound is how many batches dest may take at once: 0 for no bound of its own.
func destinationBound(dest delivery.Destination) int {
	if b, ok := dest.(delivery.BoundedDestination); ok {
		return max(b.MaxInFlight(), 0)
	}
	return 1
}

// dispatch leases batch after batch from the head (each the one after the last leased, so a
// batch is never in flight twice) while the gate's limit allows and the next batch is due,
// and carries each on its own goroutine, until none is in flight. Acks land in any order:
// each batch's events leave the queue in their own transaction when it is accepted or
// dead-lettered, and a lease's retry state is saved under its own first key, so a crash
// re-sends only what was in flight, each batch with its own state. It returns false when the
// worker must exit (Close's deadline, or a wait that would outlast it); the batches not
// delivered stay queued.
func (w *worker) dispatch() bool {
	w.board.set(func(s *workerState) { s.Busy = true })
	defer w.board.set(func(s *workerState) { s.Busy = false; s.Attempt = 0 })
	type result struct{ kind, events, bytes int }
	results := make(chan result, 1024) // more than upload.max_concurrency allows in flight
	var last *queue.Lease
	var held leased
	stop := false
	for {
		// The sources the gate holds are skipped: their batches wait, the others' go on.
		sk := &skipper{g: w.gate, stopping: w.stopping()}
		var tailDue time.Time // when a tail left unleased is batch.interval old
		for !stop && w.runCtx.Err() == nil {
			b, ok, due := w.leaseNext(last, held, sk.skip)
			if !ok {
				tailDue = due
				break
			}
			last = b
			l := w.gate.add(b)
			n, size := len(b.Events), b.Bytes
			held.add(n, size)
			w.publishInFlight()
			go func() { results <- result{w.carry(l), n, size} }()
		}
		if held.batches == 0 {
			// Close's deadline leaves nothing to lease while events are still queued: waitDue
			// would call them due at once, and the worker would spin instead of exiting. A
			// source on hold with nothing in flight waits in waitDue too, which does not count
			// its events as due.
			return !stop && w.runCtx.Err() == nil
		}
		// A source skipped for its Retry-After may be leased once it ends, and a tail left
		// unleased is due once batch.interval old: while a held source's batches stay in
		// flight the worker does not go back to waitDue, so the dispatcher keeps both times.
		at := sk.until
		if !tailDue.IsZero() && (at.IsZero() || tailDue.Before(at)) {
			at = tailDue
		}
		var holdEnds <-chan time.Time
		var timer budget.Timer
		if !at.IsZero() {
			timer = w.clock.NewTimer(at.Sub(w.clock.Now()))
			holdEnds = timer.C()
		}
		select {
		case r := <-results:
			held.remove(r.events, r.bytes)
			w.publishInFlight()
			if r.kind == nextStop {
				stop = true
			}
		case <-w.wake:
		case <-w.gate.next():
			w.publishInFlight() // the limit may have changed under batches still in flight
		case <-holdEnds:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// leased is what the dispatcher holds in flight.
type leased struct{ batches, events, bytes int }

func (h *leased) add(events, bytes int) {
	h.batches++
	h.events += events
	h.bytes += bytes
}

func (h *leased) remove(events, bytes int) {
	h.batches--
	h.events -= events
	h.bytes -= bytes
}

// leaseNext leases the batch after last (the head when last is nil), false when there is none
// or it is not due yet: then due is when that tail batch will be (its source's oldest queued
// event batch.interval old), zero when there is none. Whether a full batch follows those held
// is first judged from the queue's counters in memory, so that the wake-up of every Enqueue
// does not cost a read of the batch after them while intake is slower than delivery. skip
// passes over the sources the gate holds.
func (w *worker) leaseNext(last *queue.Lease, held leased, skip func(string) bool) (b *queue.Lease, ok bool, due time.Time) {
	s := w.settings()
	if last != nil && !w.stopping() && w.flushing.Load() == 0 {
		events, bytes, _ := w.q.Pending()
		if events-int64(held.events) < int64(s.batch.MaxEvents) && bytes-int64(held.bytes) < int64(s.leaseBytes) {
			if due := w.tailDueAt(last, held, skip, s); due.IsZero() || w.clock.Now().Before(due) {
				return nil, false, due
			} // else a tail is batch.interval old: read it
		}
	}
	if last == nil {
		b, err := w.q.LeaseSkipping(w.runCtx, s.batch.MaxEvents, s.leaseBytes, skip)
		if err != nil {
			w.log.Error("lease a batch", "error", err)
			return nil, false, time.Time{}
		}
		return b, b != nil && len(b.Events) > 0, time.Time{}
	}
	b, more, err := w.q.LeaseAfterSkipping(last, s.batch.MaxEvents, s.leaseBytes, skip)
	if err != nil {
		w.log.Warn("lease the next batch", "error", err)
		return nil, false, time.Time{}
	}
	if b == nil || len(b.Events) == 0 {
		return nil, false, time.Time{}
	}
	if !w.dueNext(b, more, s) {
		if !w.gate.anyHeld() {
			b.Release()
			return nil, false, time.Time{}
		}
		if due := w.oldestIn(b.Source).Add(s.batch.Interval); w.clock.Now().Before(due) {
			b.Release()
			return nil, false, due
		}
	}
	return b, true, time.Time{}
}

// tailDueAt is when the events not yet leased are due by age (tail batches): the oldest queued
// event of a source not skipped, batch.interval on; zero when nothing may be waiting, judged
// from memory. Only needed while a source is held: otherwise the batches in flight soon leave
// and waitDue, which knows the interval, takes over.
func (w *worker) tailDueAt(last *queue.Lease, held leased, skip func(string) bool, s *settings) time.Time {
	events, _, _ := w.q.Pending()
	if last == nil || events <= int64(held.events) || !w.gate.anyHeld() {
		return time.Time{}
	}
	var oldest time.Time
	for _, st := range w.q.Sources() {
		if st.Events > 0 && !skip(st.Name) && (oldest.IsZero() || st.Oldest.Before(oldest)) {
			oldest = st.Oldest
		}
	}
	if oldest.IsZero() {
		return time.Time{}
	}
	return oldest.Add(s.batch.Interval)
}

// oldestIn is the intake time of source's oldest queued event (zero when none).
func (w *worker) oldestIn(source string) time.Time {
	for _, st := range w.q.Sources() {
		if st.Name == source {
			return st.Oldest
		}
	}
	return time.Time{}
}

// carry delivers one lease with its own budget (restored from its saved retry state) until it
// and every half split off it have left the queue, or the worker must stop. Every attempt
// first passes the gate. A destination that builds its payload ahead (PreparingDestination)
// builds it here, while the batches before this one are in flight: with a limit of one, the
// next batch's body is ready when the one before it has been acked.
func (w *worker) carry(l *lease) int {
	defer w.gate.remove(l)
	bud := budget.New(w.settings().retry, w.clock, w.rand)
	var pre any
	work := []*queue.Lease{l.b}
	for len(work) > 0 {
		cur := work[0]
		bud.Restore(cur.RetryState())
		if cur == l.b && w.prep != nil && bud.Attempts() == 0 {
			pre = w.prep.Prepare(cur.Events) // a batch's first attempt only: a retry builds anew
		}
		w.board.set(func(s *workerState) { s.Attempt = bud.Attempts() })
		parts, kind := w.attemptUntilDone(cur, bud, pre, l)
		pre = nil
		bud.Reset()
		if kind == nextLeft {
			return nextLeft // the batch stays queued; the worker goes on with the other sources
		}
		if kind != nextDone {
			return nextStop
		}
		work = append(parts, work[1:]...)
	}
	l.b.Release() // every part has left the queue; later leases use only its keys
	return nextDone
}

// ackNow acknowledges a delivered batch in its own transaction (concurrent acks share the
// store's group commit) and books it. The lease holds its slot until then, so with a limit
// of one the next batch starts only once this one has left the queue: acks in order. A
// failed ack pauses the lease, which sends the batch again (a duplicate the collector
// dedupes by messageId, never a loss).
func (w *worker) ackNow(b *queue.Lease, info BatchInfo) next {
	var err error
	if w.ackFault != nil {
		err = w.ackFault()
	}
	if err == nil {
		err = b.Ack(w.storeCtx())
	}
	if err != nil {
		w.log.Error("ack a delivered batch; it will be sent again", "events", info.Events, "error", err)
		return next{kind: nextPause, err: err}
	}
	w.delivered(info)
	return next{kind: nextDone}
}

// publishInFlight updates the in-flight gauges on the board.
func (w *worker) publishInFlight() {
	n, lim := w.gate.inFlight(), w.gate.limit()
	w.board.set(func(s *workerState) { s.InFlight, s.Limit = n, lim })
}

// releasePayload returns a payload built ahead (nil: none) to the destination, when it will
// not be sent.
func (w *worker) releasePayload(payload any) {
	if payload != nil && w.prep != nil {
		w.prep.Release(payload)
	}
}

// dueNext reports whether b, leased after the batches in flight (more: at least one event
// followed it), may be sent at once: it is what waitDue would decide had the worker gone back
// to the head (the queue held batch.max_events or batch.max_bytes after them, a Flush, or
// Close). A smaller tail batch goes back through waitDue, which knows the interval.
func (w *worker) dueNext(b *queue.Lease, more bool, s *settings) bool {
	if b == nil || len(b.Events) == 0 {
		return false
	}
	return more || len(b.Events) >= s.batch.MaxEvents || b.Bytes >= s.leaseBytes ||
		w.stopping() || w.flushing.Load() > 0
}

// delivered books a batch whose ack has committed: counters, the info log line and
// OnDelivered.
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
