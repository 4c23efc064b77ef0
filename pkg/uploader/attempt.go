package uploader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// What the worker does after an attempt.
const (
	nextDone    = iota // the batch left the queue (acked or dead-lettered)
	nextSplit          // send the two halves instead
	nextWait           // wait, then try the same batch again
	nextPause          // a failure that spends no budget: pause, then try again
	nextRestart        // the previous batch's ack failed: pause, then start again from the head
	nextStop           // the worker must exit (Close's deadline)
	nextRefused        // our credentials were refused: the gate holds the batch until a probe
)

// next is what follows one attempt.
type next struct {
	kind int
	path string        // nextWait: PathRateLimit or PathBackoff
	wait time.Duration // nextWait
	err  error         // the failure behind nextWait/nextPause/nextRestart
}

// attempt makes one attempt of b and routes its outcome. pre, when not nil, is a payload built
// ahead for it, which the destination owns once passed. leased says that b is carried by the
// dispatcher of several in flight (inflight.go), not the FIFO loop. Acks of earlier batches may still be
// committing: after a success only those already committed are settled; any other outcome
// settles them all first, since it may write b's retry state, dead-letter b or split it.
func (w *worker) attempt(b *queue.Batch, bud *budget.Budget, first time.Time, pre any, leased bool) next {
	if w.runCtx.Err() != nil {
		w.releasePayload(prepared{payload: pre})
		return next{kind: nextStop}
	}
	// Forget (forget.go): no send starts while a forget runs, and a batch read before one goes
	// without the events it deleted; a batch left with none has left the queue.
	events, ok := w.forgets.beginSend(w.runCtx, b, &pre, w.releasePayload)
	switch {
	case !ok:
		w.releasePayload(prepared{payload: pre})
		return next{kind: nextStop}
	case events == nil:
		return next{kind: nextDone}
	}
	retryCount := bud.Attempts()
	ctx, cancel := context.WithTimeout(w.runCtx, w.settings().timeout)
	start := time.Now()
	o := w.dest.Send(ctx, Batch{Events: events, Retry: retryCount, Prepared: pre})
	w.forgets.endSend()
	took := time.Since(start)
	cancel()
	if w.runCtx.Err() != nil {
		ackErr := w.settle()
		// Close's deadline cut the attempt: not an outcome, and no budget is spent. When the
		// batch may have reached the destination, the next start counts it as a retry (unless
		// the batch before it is still queued: then b is not the head).
		if o.Written && ackErr == nil {
			st := bud.State()
			st.Attempts++
			if err := w.q.SaveRetry(b, st); err != nil {
				w.log.Warn("save retry state", "error", err)
			}
		}
		return next{kind: nextStop}
	}
	o = normalized(o)
	w.observeAttempt(o, took)
	if o.Class == ClassSuccess {
		w.resumed()
	}
	// A success only adds its ack to those committing; any other outcome may write b's retry
	// state, dead-letter it or split it, which needs b to be the head: every earlier ack first.
	var ackErr error
	if o.Class == ClassSuccess {
		ackErr = w.settleReady()
	} else {
		ackErr = w.settle()
	}
	w.recordResult(resultCode(o), o.Class == ClassSuccess)
	if o.Class == ClassAborted {
		return orRestart(next{kind: nextPause, err: o.Err}, ackErr)
	}
	w.board.count(func(c *Counters) { c.Requests++ })

	t := &tried{b: b, bud: bud, o: o, first: first, leased: leased,
		info: BatchInfo{Events: len(b.Events), Bytes: o.Bytes, Attempts: retryCount + 1, Status: o.Status, Error: string(o.NetError)}}
	var n next
	if ackErr != nil {
		// The batch before b is still queued: b's outcome is not routed (no retry state, no
		// dead letter, no ack); the worker starts again from the head and sends both again.
		w.log.Warn("the previous batch is not acknowledged; sending again from it", "events", len(b.Events), "code", resultCode(o))
		n = next{kind: nextRestart, err: ackErr}
	} else {
		n = w.route(t)
	}
	if w.hooks.OnAttempt != nil {
		w.hooks.OnAttempt(AttemptInfo{Events: len(b.Events), Code: resultCode(o), Duration: took, Retry: retryCount, Path: pathOf(n)})
	}
	return n
}

// tried is one attempt of a batch as route sees it.
type tried struct {
	b      *queue.Batch
	bud    *budget.Budget
	o      Outcome
	info   BatchInfo
	first  time.Time // the batch's first attempt, for its dead letter
	leased bool      // carried by the dispatcher of several in flight
}

// route decides what follows an attempt's outcome.
func (w *worker) route(t *tried) next {
	n := len(t.b.Events)
	split := w.settings().split
	switch t.o.Class {
	case ClassSuccess:
		if t.leased {
			return w.ackNow(t.b, t.info)
		}
		return orRestart(next{kind: nextDone}, w.startAck(t.b, t.info))
	case ClassRateLimited:
		wait, err := t.bud.RateLimited(t.o.RetryAfter)
		return w.retryOrDead(t, PathRateLimit, wait, err)
	case ClassRetryable:
		wait, err := t.bud.Failed()
		return w.retryOrDead(t, PathBackoff, wait, err)
	case ClassTooLarge:
		if split && n > 1 {
			w.log.Info("batch too large for the destination; splitting", "events", n, "code", resultCode(t.o))
			return next{kind: nextSplit}
		}
		return w.dead(t, fmt.Sprintf("too large: %s", describe(t.o)))
	case ClassAuthRefused:
		if w.settings().onAuth != OnAuthFailureDeadLetter {
			return w.refused(t)
		}
		return w.dead(t, fmt.Sprintf("rejected: %s", describe(t.o)))
	default: // rejected
		if split && n > 1 && (t.o.Status == 400 || t.o.Status == 422) {
			w.log.Info("batch rejected; splitting to isolate bad events", "events", n, "status", t.o.Status)
			return next{kind: nextSplit}
		}
		return w.dead(t, fmt.Sprintf("rejected: %s", describe(t.o)))
	}
}

// retryOrDead persists the retry state and waits wait on path, or dead-letters the batch when
// the budget is spent.
func (w *worker) retryOrDead(t *tried, path string, wait time.Duration, spent error) next {
	if spent != nil {
		return w.dead(t, fmt.Sprintf("%v (last: %s)", spent, describe(t.o)))
	}
	if err := w.q.SaveRetry(t.b, t.bud.State()); err != nil {
		w.log.Warn("save retry state", "error", err)
	}
	if path == PathRateLimit && t.leased {
		w.gate.pauseUntil(w.clock.Now().Add(wait)) // a Retry-After holds every batch, not this one alone
	}
	w.board.count(func(c *Counters) {
		if path == PathRateLimit {
			c.RetriesRateLimit++
		} else {
			c.RetriesBackoff++
		}
	})
	attempts := t.bud.Attempts()
	w.board.set(func(s *workerState) { s.Attempt = attempts })
	attrs := []any{"path", path, "attempt", attempts, "wait", wait.String(), "events", len(t.b.Events)}
	if t.o.Status != 0 {
		attrs = append(attrs, "status", t.o.Status)
	}
	if t.o.NetError != "" {
		attrs = append(attrs, "error_class", string(t.o.NetError), "error", t.o.Err)
	} else if t.o.Code != "" {
		attrs = append(attrs, "code", t.o.Code)
	}
	w.log.Warn("upload failed; retrying", attrs...)
	if w.hooks.OnRetry != nil {
		w.hooks.OnRetry(path, wait)
	}
	return next{kind: nextWait, path: path, wait: wait, err: asError(t.o)}
}

// orRestart is n, or a restart from the head when the previous batch's ack failed.
func orRestart(n next, ackErr error) next {
	if ackErr != nil {
		return next{kind: nextRestart, err: ackErr}
	}
	return n
}

// dead moves a batch to the dead letters with its reason.
func (w *worker) dead(t *tried, reason string) next {
	info := t.info
	d := queue.DeadInfo{
		Reason:       reason,
		ErrorClass:   info.Error,
		Status:       info.Status,
		Attempts:     info.Attempts,
		FirstAttempt: t.first,
		LastAttempt:  w.clock.Now(),
		Body:         t.o.Detail,
	}
	if err := w.q.DeadLetter(t.b, d); err != nil {
		w.log.Error("dead-letter a batch; it stays queued", "error", err)
		return next{kind: nextPause, err: err}
	}
	w.board.count(func(c *Counters) {
		c.EventsDead += int64(info.Events)
		c.BatchesDead++
	})
	w.log.Info("batch dead-lettered", "events", info.Events, "attempts", info.Attempts, "status", info.Status, "reason", reason)
	if w.hooks.OnDeadLetter != nil {
		w.hooks.OnDeadLetter(info, reason)
	}
	return next{kind: nextDone}
}

// recordResult updates the upload part of the worker state after an attempt.
func (w *worker) recordResult(code string, ok bool) {
	now := w.clock.Now()
	w.board.set(func(s *workerState) {
		s.LastAttempt, s.LastResult = now, code
		if ok {
			s.LastSuccess, s.FailingSince = now, time.Time{}
		} else if s.FailingSince.IsZero() {
			s.FailingSince = now
		}
	})
}

// pathOf is the retry path that follows an attempt, for AttemptInfo.
func pathOf(n next) string {
	switch n.kind {
	case nextWait:
		return n.path
	case nextRefused:
		return PathAuth
	}
	return PathNone
}

// abortedCode names a failure that kept an attempt from being made.
func abortedCode(err error) string {
	var he *HookError
	var ce *ConfigError
	switch {
	case errors.As(err, &he):
		return "hook_error"
	case errors.As(err, &ce):
		return "config_error"
	}
	return "aborted"
}
