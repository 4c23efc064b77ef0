package store

import (
	"context"

	"github.com/outboxhq/outbox/pkg/errs"
)

// This file is the store's write API. Each call builds a request and hands it to the writer
// goroutine (writer.go), which applies it in the next group's transaction: a synchronous call
// waits for that commit (submit), AppendAsync returns once the writer has the request and is
// answered through its callback. Everything a request needs of its caller is copied into it
// first, so no call keeps a caller's slice once it has returned.

// Append stores events at the tail, durable (fsynced unless NoSync) when it
// returns nil. It is AppendAwaited and a wait for its callback: the one intake path. It
// returns the Policy's refusal: errs.ErrQueueFull when they do
// not fit now (queue.when_full: reject), errs.ErrTooLarge (wrapped; nothing is
// evicted) when they could never fit. When ctx ends before the commit
// it returns ctx.Err(), and the events may or may not have been stored.
// The events' bytes are copied into the request before it reaches the writer
// (appendBlock), so the caller may reuse them at once.
func (s *Store) Append(ctx context.Context, events [][]byte) error {
	if len(events) == 0 {
		return nil
	}
	w := getWaiter()
	if err := s.AppendAwaited(ctx, events, w.fn); err != nil {
		putWaiter(w)
		return err
	}
	return w.wait(ctx)
}

// AppendAsync hands events to the writer and returns without waiting for the
// commit: cb is then called exactly once, on the writer goroutine, with nil
// once they are committed (fsynced unless NoSync), or with the error that
// kept them out (errs.ErrQueueFull under reject, errs.ErrClosed when the store closes
// first, a write error). cb must return quickly and must not call the store.
// Pending appends go into the same transactions as every other request, so
// a single producer fills commits of many events. Like Append, it copies the
// events' bytes into the request before it returns.
//
// AppendAsync returns an error, and cb is not called, when the events alone
// total more than MaxBytes (errs.ErrTooLarge, wrapped), when the store is closed
// (errs.ErrClosed) or failed, and when ctx ends while it waits for the writer to
// take the request (the writer's queue holds at most a few thousand
// requests: past that the caller waits, it is never buffered without bound).
// ctx bounds only that hand-off: once accepted, the events are committed
// whatever becomes of ctx.
func (s *Store) AppendAsync(ctx context.Context, events [][]byte, cb func(error)) error {
	return s.appendAsync(ctx, DefaultSource, false, events, cb)
}

// AppendAsyncIn is AppendAsync into source's FIFO ("" is DefaultSource). Past the source's
// own share cb gets errs.ErrSourceFull (wrapped), which refuses only that source.
func (s *Store) AppendAsyncIn(ctx context.Context, source string, events [][]byte, cb func(error)) error {
	return s.appendAsync(ctx, source, false, events, cb)
}

// AppendAwaitedIn is AppendAwaited into source's FIFO ("" is DefaultSource).
func (s *Store) AppendAwaitedIn(ctx context.Context, source string, events [][]byte, cb func(error)) error {
	return s.appendAsync(ctx, source, true, events, cb)
}

// AppendAwaited is AppendAsync for a caller that waits for cb (Append, and the layers
// above that build their synchronous call on it). ctx bounds the commit too: a request whose
// ctx has ended when the writer reaches it is not stored, and cb gets ctx's error. The writer
// knows such a caller will come back with its next request as soon as it is answered, and
// lets it join the next group (see run).
func (s *Store) AppendAwaited(ctx context.Context, events [][]byte, cb func(error)) error {
	return s.appendAsync(ctx, DefaultSource, true, events, cb)
}

// appendAsync is the one intake path of the store: every append, waited for or not, is
// handed to the writer here.
func (s *Store) appendAsync(ctx context.Context, source string, awaited bool, events [][]byte, cb func(error)) error {
	if len(events) == 0 {
		cb(nil)
		return nil
	}
	r := asyncRequests.Get().(*request)
	if err := s.appendRequest(r, events); err != nil {
		return err
	}
	if e := s.failed.Load(); e != nil {
		return e
	}
	r.ctx, r.cb, r.awaited, r.source = context.Background(), cb, awaited, sourceName(source)
	if awaited {
		r.ctx = ctx
	}
	// Under the read lock, a request is either in the channel before Close closes quit (the
	// writer then answers it, with errs.ErrClosed at the latest) or refused here.
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	select {
	case <-s.quit:
		return errs.ErrClosed
	default:
	}
	if awaited {
		s.awaitedQueued.Add(1) // before the send: the writer may take it at once
	}
	select {
	case s.reqs <- r:
		return nil
	case <-s.quit:
	case <-ctx.Done():
	}
	if awaited {
		s.awaitedQueued.Add(-1)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errs.ErrClosed
}

// Closing returns a channel closed when Close begins: requests made after it fail with
// errs.ErrClosed.
func (s *Store) Closing() <-chan struct{} { return s.quit }

// appendRequest checks the size of an append and fills r, an empty request, with it.
func (s *Store) appendRequest(r *request, events [][]byte) error {
	var need int64
	for _, e := range events {
		need += int64(len(e))
	}
	if s.opt.Policy != nil {
		// Checked before the writer: eviction could never make room, so nothing is evicted.
		if err := s.opt.Policy.Fits(need); err != nil {
			return err
		}
	}
	*r = request{kind: opAppend, count: len(events), block: s.appendBlock(events), need: need}
	return nil
}

// Delete removes the events with these keys, ascending (and the retry states saved for
// batches that start between the first and the last), in one transaction. Missing keys are
// ignored.
func (s *Store) Delete(ctx context.Context, keys [][]byte) error {
	return s.DeleteIn(ctx, DefaultSource, keys)
}

// DeleteIn is Delete within source's events ("" is DefaultSource).
func (s *Store) DeleteIn(ctx context.Context, source string, keys [][]byte) error {
	return s.submit(ctx, &request{kind: opDelete, source: sourceName(source), keys: keys})
}

// MoveDead moves the events with these keys into one dead batch carrying
// info (its Body cut to MaxBodySnippet; its Replays counted from the replay runs the events
// came from), in one transaction.
func (s *Store) MoveDead(ctx context.Context, keys [][]byte, info DeadInfo) error {
	return s.MoveDeadIn(ctx, DefaultSource, keys, info)
}

// MoveDeadIn is MoveDead within source's events ("" is DefaultSource): the dead batch records
// its source (DeadInfo.Source), and Replay puts it back into that source.
func (s *Store) MoveDeadIn(ctx context.Context, source string, keys [][]byte, info DeadInfo) error {
	source = sourceName(source)
	info.Replays = 0 // the writer counts them (replay.go)
	info.Source = ""
	if source != DefaultSource {
		info.Source = source // the default source is left out: a dead batch as earlier files hold it
	}
	return s.submit(ctx, &request{kind: opDead, source: source, keys: keys, info: encodeDeadInfo(info)})
}

// SaveRetry stores state, opaque bytes of the caller's encoding (pkg/queue's), as the retry
// state of a batch in flight (first key headKey, count events), beside those of the other
// batches in flight; Head and ReadAfter return that batch whole, with state in Batch.Retry.
// It is ignored when headKey is no longer stored.
func (s *Store) SaveRetry(ctx context.Context, headKey []byte, count int, state []byte) error {
	return s.SaveRetryIn(ctx, DefaultSource, headKey, count, state)
}

// SaveRetryIn is SaveRetry for a batch of source ("" is DefaultSource).
func (s *Store) SaveRetryIn(ctx context.Context, source string, headKey []byte, count int, state []byte) error {
	return s.submit(ctx, &request{kind: opRetry, source: sourceName(source), keys: [][]byte{headKey}, count: count, info: state})
}

// Replay moves dead batches (all when ids is empty) back to the tail of the
// queue with new keys, oldest first, and returns how many events moved.
func (s *Store) Replay(ctx context.Context, ids [][]byte) (int, error) {
	r := &request{kind: opReplay, keys: ids}
	err := s.submit(ctx, r)
	return r.n, err
}

// ReplayMatching is Replay of the dead batches f matches when it commits (every one for the
// zero DeadFilter).
func (s *Store) ReplayMatching(ctx context.Context, f DeadFilter) (DeadResult, error) {
	r := &request{kind: opReplay, filter: &f}
	err := s.submit(ctx, r)
	return DeadResult{Batches: r.batches, Events: r.n}, err
}

// Purge deletes dead batches (all when ids is empty) and returns how many.
func (s *Store) Purge(ctx context.Context, ids [][]byte) (int, error) {
	r := &request{kind: opPurge, keys: ids}
	err := s.submit(ctx, r)
	return r.n, err
}

// PurgeMatching is Purge of the dead batches f matches when it commits (every one for the zero
// DeadFilter).
func (s *Store) PurgeMatching(ctx context.Context, f DeadFilter) (DeadResult, error) {
	r := &request{kind: opPurge, filter: &f}
	err := s.submit(ctx, r)
	return DeadResult{Batches: r.n, Events: r.events}, err
}

// Compact rewrites the file with only its live data, online.
func (s *Store) Compact(ctx context.Context) error {
	return s.submit(ctx, &request{kind: opCompact})
}

// submit hands r to the writer and waits for its answer or ctx.
func (s *Store) submit(ctx context.Context, r *request) error {
	if e := s.failed.Load(); e != nil {
		return e
	}
	r.ctx = ctx
	r.done = make(chan error, 1)
	select {
	case s.reqs <- r:
	case <-s.quit:
		return errs.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-s.stopped:
		select {
		case err := <-r.done:
			return err
		default:
			if e := s.failed.Load(); e != nil {
				return e
			}
			return errs.ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}
