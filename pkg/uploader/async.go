package uploader

import (
	"context"
	"errors"
	"fmt"

	"github.com/outboxhq/outbox/pkg/errs"
)

// asyncState is EnqueueAsync's accounting: the calls accepted whose done has not returned
// yet, the bytes they hold against queue.max_pending_bytes, and the goroutine that calls
// their done (never the caller's, never the store's writer: a done that blocks or enqueues
// again must not stall commits).
//
// A call holds its bytes from the moment it is accepted until just before its done is called
// (so a done may enqueue again without waiting for itself), and counts as owed until its done
// has returned: Flush and Close wait for that.
//
// Its fields are guarded by the Client's mu, which also guards the Client's closed flag: a
// call checks that Close has not begun and reserves in one critical section.
type asyncState struct {
	events  int64         // pending events (accepted, done not yet called)
	bytes   int64         // their normalised bytes
	calls   int64         // accepted calls whose done has not returned
	waiters int           // EnqueueAsync calls waiting for room
	room    chan struct{} // closed (and dropped) when bytes are released while someone waits
	idle    chan struct{} // closed (and dropped) when calls falls to 0
	ready   []asyncCall   // answered by the queue, waiting for the dispatcher
	spare   []asyncCall   // the dispatcher's previous batch, reused for ready
	wake    chan struct{} // buffered 1: ready is not empty, or Close is done
	running bool          // the dispatcher goroutine has been started
}

// asyncCall is one accepted EnqueueAsync call. It is held by value (in the callback the queue
// gets, then in ready), so a call costs the queue one closure and nothing else.
type asyncCall struct {
	done          func(error)
	events, bytes int64
	err           error
}

// EnqueueAsync validates and normalises events and hands them to the store's writer; it
// returns as soon as they are accepted in memory. done (may be nil) is called exactly once,
// from another goroutine, with nil once the events are committed (and fsynced with
// queue.sync: always), or with the error that kept them off the disk: an error matching
// errs.ErrQueueFull when they do not fit under queue.when_full: reject, errs.ErrClosed when Close's
// deadline passed first, a write error. All or nothing, like Enqueue: one commit holds all of
// a call's events or none.
//
// It returns an error, and done is not called, for bad input (the same *event.Error as
// Enqueue), after Close (errs.ErrClosed), for events that alone exceed queue.max_bytes
// (errs.ErrTooLarge), and when ctx ends while it waits for room. The events of the calls whose done
// has not been called are bounded by queue.max_pending_bytes (counted on the normalised
// bytes): past it EnqueueAsync waits until earlier calls are answered, or ctx ends. ctx bounds
// only that wait; once EnqueueAsync has returned nil the events are committed whatever becomes
// of ctx.
//
// Everything pending goes into the writer's next transaction, with any Enqueue calls waiting,
// so one goroutine calling EnqueueAsync in a loop fills commits of hundreds of events; a lone
// event still commits at once. Flush and Close first wait for every pending call's done, and
// Close never returns while one is owed. A crash loses only events whose done had not been
// called with nil: done(nil) is the acknowledgement that they are durable.
//
// done runs on one goroutine of the client, in commit order; it must not block for long
// (later dones wait for it) and must not call Flush or Close. A done that calls EnqueueAsync
// again may have to wait for room that only later dones free: give that call a ctx that ends. Under queue.when_full: block, a
// call that does not fit waits for room in the queue (holding its pending bytes, so that
// EnqueueAsync eventually waits too) and is then queued after events enqueued meanwhile.
func (c *Client) EnqueueAsync(ctx context.Context, done func(error), events ...any) error {
	call, err := c.normalize(events)
	if err != nil {
		return err
	}
	defer call.release() // the store has copied the bytes before the hand-off returns
	return c.EnqueueNormalizedAsync(ctx, done, call.events...)
}

// EnqueueNormalizedAsync is EnqueueAsync for events that are already normalised (by
// event.Normalize or event.ParseBatch); it does not validate them again. It copies the
// events' bytes before it returns, so the caller may reuse their buffer at once.
func (c *Client) EnqueueNormalizedAsync(ctx context.Context, done func(error), events ...[]byte) error {
	return c.enqueueNormalized(ctx, DefaultSource, false, done, events)
}

// enqueueNormalized is the client's one intake path: every call, waited for (awaited: ctx then
// bounds its commit too, see queue.EnqueueAwaited) or not, reserves its pending bytes here and
// is answered through the dispatcher.
func (c *Client) enqueueNormalized(ctx context.Context, source string, awaited bool, done func(error), events [][]byte) error {
	call := asyncCall{done: done, events: int64(len(events))}
	for _, e := range events {
		call.bytes += int64(len(e))
	}
	if err := c.q.Fits(call.bytes); err != nil { // before waiting for pending room: it never comes
		return fmt.Errorf("uploader: enqueue: %w", err)
	}
	leave, err := c.sources.enter(source) // a removed source is kept until this call is answered
	if err != nil {
		return err
	}
	if err := c.reserve(ctx, &call); err != nil {
		if leave != nil {
			leave()
		}
		return err
	}
	if len(events) == 0 {
		c.answered(call, nil)
		if leave != nil {
			leave()
		}
		return nil
	}
	answer := call // captured by value: the callback is the call's only allocation (two for a named source)
	cb := func(err error) { c.answered(answer, err) }
	if leave != nil {
		cb = func(err error) { c.answered(answer, err); leave() }
	}
	if awaited {
		err = c.q.EnqueueAwaitedIn(ctx, source, cb, events...)
	} else {
		err = c.q.EnqueueAsyncIn(ctx, source, cb, events...)
	}
	if err == nil {
		return nil
	}
	if leave != nil {
		leave()
	}
	c.unreserve(&call)
	if errors.Is(err, errs.ErrClosed) {
		return errs.ErrClosed
	}
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("uploader: enqueue: %w", err)
}

// reserve accounts call as pending, first waiting while the pending bytes would exceed
// queue.max_pending_bytes. A call larger than the bound on its own is let in when nothing else
// is pending, so it cannot wait forever.
func (c *Client) reserve(ctx context.Context, call *asyncCall) error {
	a := &c.async
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return errs.ErrClosed
		}
		if a.bytes == 0 || a.bytes+call.bytes <= c.cfg.Queue.MaxPendingBytes {
			break
		}
		if a.room == nil {
			a.room = make(chan struct{})
		}
		room := a.room
		a.waiters++
		c.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			c.mu.Lock()
			a.waiters--
			c.mu.Unlock()
			return ctx.Err()
		}
		c.mu.Lock()
		a.waiters--
	}
	a.events += call.events
	a.bytes += call.bytes
	if a.calls == 0 {
		a.idle = make(chan struct{})
	}
	a.calls++
	if !a.running {
		a.running = true
		a.wake = make(chan struct{}, 1)
		go c.dispatch()
	}
	c.mu.Unlock()
	return nil
}

// unreserve takes back a reservation whose events never reached the queue.
func (c *Client) unreserve(call *asyncCall) {
	a := &c.async
	c.mu.Lock()
	a.release(call)
	a.calls--
	a.settleIdle()
	c.mu.Unlock()
}

// answered hands a call's outcome to the dispatcher. It runs on the store's writer goroutine
// (or the queue's, under when_full: block) and only appends under the lock.
func (c *Client) answered(call asyncCall, err error) {
	a := &c.async
	switch {
	case err == nil:
	case errors.Is(err, errs.ErrClosed):
		call.err = errs.ErrClosed
	default:
		call.err = fmt.Errorf("uploader: enqueue: %w", err)
	}
	c.mu.Lock()
	a.ready = append(a.ready, call)
	wake := a.wake
	c.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// dispatch calls the done of every answered call, in the order they were answered, until
// Close has begun and nothing is owed. Per wake-up it takes every call answered so far: one
// lock round for a whole commit's calls.
func (c *Client) dispatch() {
	a := &c.async
	for {
		c.mu.Lock()
		batch := a.ready
		if len(batch) > 0 {
			a.ready, a.spare = a.spare[:0], nil
		}
		for i := range batch {
			a.release(&batch[i]) // before done: a done may enqueue again
		}
		wake := a.wake
		quit := len(batch) == 0 && c.closed && a.calls == 0
		c.mu.Unlock()
		if quit {
			return
		}
		if len(batch) == 0 {
			<-wake
			continue
		}
		var stored int64
		for _, call := range batch {
			if call.err == nil {
				stored += call.events
			}
		}
		if stored > 0 { // before the dones: a caller that was answered sees its events counted
			c.board.count(func(ctr *Counters) { ctr.EventsEnqueued += stored })
			if c.hooks.OnEnqueued != nil {
				c.hooks.OnEnqueued(int(stored))
			}
		}
		for _, call := range batch {
			if call.done != nil {
				call.done(call.err)
			}
		}
		c.mu.Lock()
		a.calls -= int64(len(batch))
		a.settleIdle()
		clear(batch)
		a.spare = batch[:0]
		c.mu.Unlock()
	}
}

// release returns call's pending bytes and wakes the calls waiting for room; c.mu is held.
func (a *asyncState) release(call *asyncCall) {
	a.events -= call.events
	a.bytes -= call.bytes
	if a.waiters > 0 {
		a.wakeRoomWaiters()
	}
}

// settleIdle wakes the waiters of waitAsync when nothing is owed; c.mu is held.
func (a *asyncState) settleIdle() {
	if a.calls == 0 && a.idle != nil {
		close(a.idle)
		a.idle = nil
	}
}

// wakeRoomWaiters wakes the EnqueueAsync calls waiting for room, to look again: at the pending
// bytes after a release, or at the closed flag once Close has begun; c.mu is held.
func (a *asyncState) wakeRoomWaiters() {
	if a.room != nil {
		close(a.room)
		a.room = nil
	}
}

// waitAsync waits until every accepted EnqueueAsync call's done has returned, or ctx ends.
func (c *Client) waitAsync(ctx context.Context) error {
	a := &c.async
	for {
		c.mu.Lock()
		idle := a.idle
		owed := a.calls
		c.mu.Unlock()
		if owed == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stopAsync ends the dispatcher once nothing is owed (after Close closed the queue, which
// answers every call it still held).
func (c *Client) stopAsync() {
	_ = c.waitAsync(context.Background())
	a := &c.async
	c.mu.Lock()
	wake := a.wake
	c.mu.Unlock()
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// pending returns the events and bytes accepted by EnqueueAsync whose done has not been called.
func (c *Client) pending() (events, bytes int64) {
	a := &c.async
	c.mu.Lock()
	defer c.mu.Unlock()
	return a.events, a.bytes
}
