package uploader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/queue"
)

// What the worker does after an attempt.
const (
	nextDone    = iota // the batch left the queue (acked or dead-lettered)
	nextSplit          // send the two halves instead
	nextWait           // wait, then try the same batch again
	nextPause          // a failure that spends no budget: pause, then try again
	nextStop           // the worker must exit (Close's deadline)
	nextRefused        // our credentials were refused: the gate holds the batch until a probe
	nextLeft           // after Close, the batch's source is held past the deadline: the batch stays queued, the others go on
)

// next is what follows one attempt.
type next struct {
	kind int
	path string        // nextWait: PathRateLimit or PathBackoff
	wait time.Duration // nextWait
	err  error         // the failure behind nextWait/nextPause
}

// attempt makes one attempt of b, admitted by the gate, tells the gate how it ended, and
// routes its outcome. pre, when not nil, is a payload built ahead for it, which the
// destination owns once passed. l is the lease b belongs to.
func (w *worker) attempt(b *queue.Lease, bud *budget.Budget, first time.Time, pre any, l *lease) next {
	id := l.seq
	if w.runCtx.Err() != nil {
		w.gate.finish(id, nil, 0)
		w.releasePayload(pre)
		return next{kind: nextStop}
	}
	// Forget (forget.go): no send starts while a forget runs, and a batch read before one goes
	// without the events it deleted; a batch left with none has left the queue.
	events, ok := w.forgets.beginSend(w.runCtx, b, &pre, w.releasePayload)
	switch {
	case !ok:
		w.gate.finish(id, nil, 0)
		w.releasePayload(pre)
		return next{kind: nextStop}
	case events == nil:
		w.gate.finish(id, nil, 0)
		return next{kind: nextDone}
	}
	retryCount := bud.Attempts()
	ctx, cancel := context.WithTimeout(w.runCtx, w.settings().timeout)
	start := time.Now()
	o := w.dest.Send(ctx, delivery.Batch{Events: events, Source: b.Source, Retry: retryCount, Prepared: pre})
	w.forgets.endSend()
	took := time.Since(start)
	cancel()
	if w.runCtx.Err() != nil {
		w.gate.finish(id, nil, took)
		// Close's deadline cut the attempt: not an outcome, and no budget is spent. When the
		// batch may have reached the destination, the next start counts it as a retry.
		if o.Written {
			st := bud.State()
			st.Attempts++
			if err := b.Retry(w.storeCtx(), st); err != nil {
				w.log.Warn("save retry state", "error", err)
			}
		}
		return next{kind: nextStop}
	}
	o = normalized(o)
	if o.Class == delivery.ClassAborted {
		w.gate.finish(id, nil, took)
	} else {
		w.gate.finish(id, &o, took)
	}
	if o.Class == delivery.ClassSuccess {
		w.resumed(sourceOf(b))
	}
	w.recordResult(resultCode(o), o.Class == delivery.ClassSuccess)
	if o.Class == delivery.ClassAborted {
		return next{kind: nextPause, err: o.Err}
	}
	w.board.count(func(c *Counters) { c.Requests++ })

	t := &tried{b: b, bud: bud, o: o, first: first,
		info: BatchInfo{Events: len(b.Events), Bytes: o.Bytes, Attempts: retryCount + 1, Status: o.Status, Code: resultCode(o), Error: string(o.NetError), Source: b.Source}}
	n := w.route(t)
	if w.hooks.OnAttempt != nil {
		w.hooks.OnAttempt(AttemptInfo{Events: len(b.Events), Code: resultCode(o), Duration: took, Retry: retryCount, Path: pathOf(n)})
	}
	return n
}

// tried is one attempt of a batch as route sees it.
type tried struct {
	b     *queue.Lease
	bud   *budget.Budget
	o     delivery.Outcome
	info  BatchInfo
	first time.Time // the batch's first attempt, for its dead letter
}

// route decides what follows an attempt's outcome.
func (w *worker) route(t *tried) next {
	n := len(t.b.Events)
	split := w.settings().split
	switch t.o.Class {
	case delivery.ClassSuccess:
		return w.ackNow(t.b, t.info)
	case delivery.ClassRateLimited:
		wait, err := t.bud.RateLimited(t.o.RetryAfter)
		return w.retryOrDead(t, PathRateLimit, wait, err)
	case delivery.ClassRetryable:
		wait, err := t.bud.Failed()
		return w.retryOrDead(t, PathBackoff, wait, err)
	case delivery.ClassTooLarge:
		if split && n > 1 {
			w.log.Info("batch too large for the destination; splitting", "events", n, "code", resultCode(t.o))
			return next{kind: nextSplit}
		}
		return w.dead(t, queue.DeadTooLarge, fmt.Sprintf("too large: %s", describe(t.o)))
	case delivery.ClassAuthRefused:
		if w.settings().onAuth != OnAuthFailureDeadLetter {
			return w.refused(t)
		}
		return w.dead(t, queue.DeadRejected, fmt.Sprintf("rejected: %s", describe(t.o)))
	default: // rejected
		if split && n > 1 && t.o.Splittable {
			w.log.Info("batch rejected; splitting to isolate bad events", "events", n, "code", resultCode(t.o))
			return next{kind: nextSplit}
		}
		return w.dead(t, queue.DeadRejected, fmt.Sprintf("rejected: %s", describe(t.o)))
	}
}

// retryOrDead persists the retry state and waits wait on path, or dead-letters the batch when
// the budget is spent.
func (w *worker) retryOrDead(t *tried, path string, wait time.Duration, spent error) next {
	if spent != nil {
		return w.dead(t, queue.DeadBudgetSpent, fmt.Sprintf("%v (last: %s)", spent, describe(t.o)))
	}
	if err := t.b.Retry(w.storeCtx(), t.bud.State()); err != nil {
		w.log.Warn("save retry state", "error", err)
	}
	if path == PathRateLimit {
		w.gate.pauseUntil(sourceOf(t.b), w.clock.Now().Add(wait)) // a Retry-After holds every batch of the source (its write key), not this one alone
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

// dead moves a batch to the dead letters with its reason (one of queue.DeadReasons) and why,
// in a sentence (the reason OnDeadLetter is given).
func (w *worker) dead(t *tried, reason, why string) next {
	info := t.info
	d := queue.DeadInfo{
		Reason:       reason,
		Detail:       why,
		Code:         info.Code,
		ErrorClass:   info.Error,
		Status:       info.Status,
		Attempts:     info.Attempts,
		FirstAttempt: t.first,
		LastAttempt:  w.clock.Now(),
		Body:         t.o.Detail,
	}
	if err := t.b.DeadLetter(w.storeCtx(), d); err != nil {
		w.log.Error("dead-letter a batch; it stays queued", "error", err)
		return next{kind: nextPause, err: err}
	}
	w.board.count(func(c *Counters) {
		c.EventsDead += int64(info.Events)
		c.BatchesDead++
	})
	w.log.Info("batch dead-lettered", "events", info.Events, "attempts", info.Attempts, "status", info.Status, "reason", reason, "why", why)
	if w.hooks.OnDeadLetter != nil {
		w.hooks.OnDeadLetter(info, why)
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

// abortedCode names a failure that kept an attempt from being made (a destination names its
// own, as the HTTP destination's "hook_error", in Outcome.Code).
func abortedCode(err error) string {
	if ce := (*delivery.ConfigError)(nil); errors.As(err, &ce) {
		return "config_error"
	}
	return "aborted"
}

// sourceOf is the source of b's events ("" in a batch is the default source).
func sourceOf(b *queue.Lease) string {
	if b == nil || b.Source == "" {
		return DefaultSource
	}
	return b.Source
}
