package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store/internal/format"
	bolt "go.etcd.io/bbolt"
)

type opKind uint8

const (
	opAppend opKind = iota
	opDelete
	opDead
	opRetry
	opReplay
	opPurge
	opDropCorrupt
	opFixCounts
	opCompact
	opForget // forget.go
	opSalt   // forget.go
	opPutMeta
)

// request is one unit of work for the writer. Logical failures (errs.ErrQueueFull,
// errs.ErrTooLarge, errs.ErrNotFound) are detected before the op writes anything, so
// they fail only their own request; any other error aborts the whole group.
type request struct {
	ctx  context.Context
	kind opKind
	// source is the source the request's events belong to (append, delete, dead, retry,
	// dropCorrupt; "" is DefaultSource).
	source string
	block  *[]byte       // append: per event its record's length, a 20-byte key slot, its record (built by appendBlock; pooled)
	need   int64         // append: sum of len(events)
	keys   [][]byte      // delete, dead, retry, dropCorrupt: event keys; replay, purge: dead ids
	info   []byte        // dead: info; retry: state
	count  int           // append: events in block; retry: events in the batch
	delta  format.Counts // fixCounts
	// srcDelta is fixCounts' correction of each source's counters (Events and Bytes).
	srcDelta map[string]format.Counts
	n        int // result: events (append, replay) or batches (purge) affected
	// filter picks the dead batches of a replay or purge without ids (nil or zero: all).
	filter  *DeadFilter
	batches int // result: dead batches replayed
	events  int // result: events purged
	err     error
	done    chan error  // sync requests: receives err
	cb      func(error) // appends (AppendAsync, AppendAwaited): called with err on the writer goroutine

	awaited bool // append: its caller waits for cb (AppendAwaited) and will come back once answered

	match  func(event []byte) bool // forget: the events to delete
	forgot ForgetResult            // forget: result

	answered bool // answer has run; writer goroutine only
}

// answer hands the request's outcome to whoever waits for it, once: a group whose
// transaction panicked is answered by its guard, whatever part of it was answered before.
func (r *request) answer() {
	if r.answered {
		return
	}
	r.answered = true
	if r.cb != nil {
		r.cb(r.err)
		return
	}
	r.done <- r.err
}

// maxGroup bounds the requests coalesced into one transaction, and maxQueued those waiting
// for the writer (past it a producer waits to hand its request over). A transaction takes
// every request waiting: with fsync'd commits of a few milliseconds, one EnqueueAsync producer
// queues thousands of one-event requests meanwhile, and a smaller bound would cut its commits
// short and make it wait on the channel instead of on queue.max_pending_bytes.
const (
	maxGroup  = 16384
	maxQueued = 16384
)

// run is the writer goroutine: it takes every request that is waiting,
// applies them in one write transaction, commits (one fsync) and answers
// each. A lone request is committed at once: the only wait is for callers expected back.
//
// Appenders that wait for their commit (Append, AppendAwaited) come back as soon as they are
// answered; the group lets them fill it (fill.go) for at most one commit's time, applying
// each request as it arrives (see commitGroup).
// Synchronous producers get at most producers / (commit latency + the time until the last of
// them is back with its next request): that time is the disk's idle time.
func (s *Store) run() {
	defer close(s.stopped)
	s.group = make([]*request, 0, 1024)
	yield := false // the last group answered callers that wait for their commit
	for {
		select {
		case r := <-s.reqs:
			s.took(r)
			s.group = append(s.group[:0], r)
		case <-s.cs.due:
			s.cs.due = nil
			s.maybeCompact()
			continue
		case <-s.quit:
			if s.cs.timer != nil {
				s.cs.timer.Stop()
			}
			s.drainClosed()
			return
		}
		if r := s.group[0]; r.kind == opCompact {
			s.group, s.held = s.group[:0], r
		} else {
			// Let producers that were just answered resubmit before the group is
			// cut: a yield, not a timer, so a lone caller loses microseconds. Only
			// when the last group answered callers that wait: an AppendAsync producer
			// did not wait, and a yield to it (busy, never blocking) can cost the
			// writer a whole time slice.
			if yield {
				runtime.Gosched()
			}
			s.take()
		}
		if len(s.group) > 0 {
			s.commitGroup()
		}
		yield = slices.ContainsFunc(s.group, func(r *request) bool { return r.cb == nil || r.awaited })
		s.recycle()
		if r := s.held; r != nil {
			s.held = nil
			r.done <- s.compact()
		}
	}
}

// take moves the requests waiting in the channel into the group (join), without waiting, up
// to maxGroup.
func (s *Store) take() {
	for len(s.group) < maxGroup && s.held == nil {
		select {
		case r := <-s.reqs:
			if !s.join(r) {
				return
			}
		default:
			return
		}
	}
}

func (s *Store) drainClosed() {
	for {
		select {
		case r := <-s.reqs:
			s.took(r)
			r.err = errs.ErrClosed
			r.answer()
		default:
			return
		}
	}
}

func isLogical(err error) bool {
	return errors.Is(err, errs.ErrQueueFull) || errors.Is(err, errs.ErrTooLarge) || errors.Is(err, errs.ErrNotFound) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// commitGroup applies the group in one transaction and answers every request. Requests that
// arrive while it is applied join it (take), up to maxGroup: those of producers answered by
// the previous commit that come back meanwhile share this commit instead of waiting for the
// next one. When the group has been applied and the callers expected back are not all in it,
// the writer waits for the next of them with the transaction open (fill.go), so that each
// request is applied as it arrives and the commit is left with only the pages to write and
// fsync; the transaction commits once they are all there, or the channel is found empty after
// the wait has run out.
func (s *Store) commitGroup() {
	start := time.Now()
	f := s.startFill()
	w := s.w
	s.pendingDrops = s.pendingDrops[:0]
	s.pendingRuns = s.pendingRuns[:0]
	s.srcCloned = false
	clear(s.srcDirty)
	fail := func(err error) {
		for _, r := range s.group {
			if r.err == nil || !isLogical(r.err) {
				r.err = err
			}
			r.answer()
		}
	}
	if e := s.failed.Load(); e != nil {
		fail(e)
		return
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		fail(fmt.Errorf("store: begin write: %w", err))
		return
	}
	// Every record handed to the sealer is sealed before the group's blocks go back to the
	// pool (after this returns), whatever ends the group.
	defer s.sealer.wait(&s.scratch)
	defer s.guardGroup(tx)
	s.noteHighWater(tx.Size())
	b := newBuckets(tx)
	added := 0
	defer f.stop(s)
	for i := 0; ; i++ {
		if i == len(s.group) { // all applied: take what has arrived, else wait for a caller expected back
			if s.take(); i == len(s.group) {
				f.await(s)
			}
			if i == len(s.group) {
				break
			}
		}
		r := s.group[i]
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if r.kind != opAppend {
			s.sealer.wait(&s.scratch) // it may read a record appended earlier in the group
		}
		r.err = s.apply(b, r, &w)
		if r.err != nil && !isLogical(r.err) {
			_ = tx.Rollback()
			fail(fmt.Errorf("store: write: %w", r.err))
			return
		}
		if r.kind == opAppend && r.err == nil {
			added += r.count
		}
		if r.kind == opReplay {
			added += r.n
		}
	}
	s.sealer.wait(&s.scratch) // the commit writes the records' bytes
	newHead := s.sourceHeads(b, &w)
	if err := s.putCounts(b, &w); err != nil {
		_ = tx.Rollback()
		fail(fmt.Errorf("store: write counters: %w", err))
		return
	}
	synced := !s.db.NoSync // read before Commit: the flag bbolt acts on
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("store: commit: %w", err))
		return
	}
	w.commits++
	if synced {
		w.synced++
	}
	for _, r := range s.pendingRuns {
		s.intake.add(r.first, r.last, r.at)
	}
	if newHead {
		w.headTime = s.intake.timeOf(w.head)
		for name, moved := range s.srcDirty {
			if p := w.sources[name]; moved && p != nil {
				p.headTime = s.intake.at(p.head)
			}
		}
	}
	freed := w.Bytes < s.w.Bytes
	shrunk := freed || w.DeadBytes < s.w.DeadBytes
	s.w = w
	s.mu.Lock()
	s.pub = w
	s.mu.Unlock()
	if freed {
		// Swap first: a caller that loads the new channel after this has seen the freed state.
		old := s.room.Swap(&roomCh{ch: make(chan struct{})})
		close(old.ch)
	}
	busy := time.Since(start) - f.waited // the writer's own time: applying, committing, fsyncing
	if s.opt.OnCommit != nil {
		s.opt.OnCommit(added, busy) // before answering, so callers see it counted
	}
	s.reportDrops()
	if shrunk {
		// Before answering, so that a caller who drained the queue sees the
		// file small again; appends wait in the channel meanwhile.
		s.maybeCompact()
	}
	for _, r := range s.group {
		r.answer()
	}
	s.noteAnswered(busy)
	if added > 0 {
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// buckets are the handles of one write transaction: the default source's events, the dead
// letters and meta, and the events buckets of the other sources as they are used (eventsOf).
type buckets struct {
	tx                 *bolt.Tx
	events, dead, meta *bolt.Bucket
	src                map[string]*bolt.Bucket
}

func newBuckets(tx *bolt.Tx) *buckets {
	b := &buckets{tx: tx, events: tx.Bucket(format.BucketEvents), dead: tx.Bucket(format.BucketDead), meta: tx.Bucket(format.BucketMeta)}
	// Keys only ever grow, so pages can be filled completely instead of the
	// default half: ~1.6× faster appends and a much smaller file.
	b.events.FillPercent = 1.0
	b.dead.FillPercent = 1.0
	return b
}
