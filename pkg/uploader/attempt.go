package uploader

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/queue"
)

// What the worker does after an attempt.
const (
	actDone    = iota // the batch left the queue (acked or dead-lettered)
	actSplit          // send the two halves instead
	actWait           // wait, then try the same batch again
	actPause          // a failure that spends no budget: pause, then try again
	actRestart        // the previous batch's ack failed: pause, then start again from the head
	actStop           // the worker must exit (Close's deadline)
)

type action struct {
	kind int
	path string        // actWait: PathRateLimit or PathBackoff
	wait time.Duration // actWait
	err  error         // the failure behind actWait/actPause/actRestart
}

// attempt makes one attempt of b and routes its outcome (SPEC section 5). pre, when not nil,
// is a body built ahead for it; attempt owns it. Acks of earlier batches may still be
// committing: after a 2xx only those already committed are settled; any other outcome settles
// them all first, since it may write b's retry state, dead-letter b or split it.
func (c *Client) attempt(b *queue.Batch, bud *budget.Budget, t *tracker, pre *body) action {
	if c.runCtx.Err() != nil {
		if pre != nil {
			pre.Release()
		}
		return action{kind: actStop}
	}
	retryCount := bud.Attempts()
	body, err := c.bodyFor(b.Events, pre)
	if err != nil {
		return c.notSent(action{kind: actPause, err: err})
	}
	defer body.Release()
	var trace SendTrace
	ctx, cancel := context.WithTimeout(trace.Context(c.runCtx), c.cfg.Upload.Timeout)
	defer cancel()
	req, err := c.rb.build(ctx, body.Bytes(), retryCount)
	if err != nil {
		c.log.Error("cannot build the upload request; batch stays queued", "error", err)
		c.recordResult(resultCode(err), false)
		return c.notSent(action{kind: actPause, err: err})
	}
	resp, snippet, took, sendErr := send(c.hc, req, &trace)
	if c.runCtx.Err() != nil {
		ackErr := c.settle()
		// Close's deadline cut the attempt: not an outcome, and no budget is spent. When the
		// request was written it may have reached the collector, so the next start counts it
		// as a retry (unless the batch before it is still queued: then b is not the head).
		if trace.Written() && ackErr == nil {
			st := bud.State()
			st.Attempts++
			if err := c.q.SaveRetry(b, toQueueState(st)); err != nil {
				c.log.Warn("save retry state", "error", err)
			}
		}
		return action{kind: actStop}
	}
	v := toVerdict(c.classify(resp, sendErr, c.now()), resp, sendErr)
	// A success only adds its ack to those committing; any other outcome may write b's retry
	// state, dead-letter it or split it, which needs b to be the head: every earlier ack first.
	var ackErr error
	if v.kind == vSuccess {
		ackErr = c.settleReady()
	} else {
		ackErr = c.settle()
	}
	if v.kind == vAborted {
		c.recordResult("aborted", false)
		return orRestart(action{kind: actPause, err: v.err}, ackErr)
	}
	c.mu.Lock()
	c.counters.Requests++
	c.mu.Unlock()
	c.recordResult(v.code(), v.kind == vSuccess)

	info := BatchInfo{Events: len(b.Events), Bytes: body.Plain, Attempts: retryCount + 1, Status: v.status, Error: v.errClass}
	var act action
	if ackErr != nil {
		// The batch before b is still queued: b's outcome is not routed (no retry state, no
		// dead letter, no ack); the worker starts again from the head and sends both again.
		c.log.Warn("the previous batch is not acknowledged; sending again from it", "events", len(b.Events), "code", v.code())
		act = action{kind: actRestart, err: ackErr}
	} else {
		act = c.route(b, bud, v, info, snippet, t)
	}
	if c.hooks.OnAttempt != nil {
		c.hooks.OnAttempt(AttemptInfo{Events: len(b.Events), Code: v.code(), Duration: took, Retry: retryCount, Path: pathOf(act)})
	}
	return act
}

// route decides what follows an attempt's verdict.
func (c *Client) route(b *queue.Batch, bud *budget.Budget, v verdict, info BatchInfo, snippet []byte, t *tracker) action {
	n := len(b.Events)
	split := c.cfg.Upload.SplitRejected
	switch v.kind {
	case vSuccess:
		return c.ack(b, info)
	case vRateLimited:
		wait, err := bud.RateLimited(v.retryAfter)
		return c.retryOrDead(b, bud, v, info, snippet, t, PathRateLimit, wait, err)
	case vRetryable:
		wait, err := bud.Failed()
		return c.retryOrDead(b, bud, v, info, snippet, t, PathBackoff, wait, err)
	case vTooLarge:
		if split && n > 1 {
			c.log.Info("batch too large for the collector; splitting", "events", n, "status", v.status)
			return action{kind: actSplit}
		}
		return c.dead(b, info, snippet, t, fmt.Sprintf("too large: %s", v.describe(snippet)))
	default: // rejected
		if split && n > 1 && (v.status == 400 || v.status == 422) {
			c.log.Info("batch rejected; splitting to isolate bad events", "events", n, "status", v.status)
			return action{kind: actSplit}
		}
		return c.dead(b, info, snippet, t, fmt.Sprintf("rejected: %s", v.describe(snippet)))
	}
}

// retryOrDead persists the retry state and waits, or dead-letters the batch when the budget
// is spent.
func (c *Client) retryOrDead(b *queue.Batch, bud *budget.Budget, v verdict, info BatchInfo, snippet []byte, t *tracker,
	path string, wait time.Duration, spent error) action {
	if spent != nil {
		return c.dead(b, info, snippet, t, fmt.Sprintf("%v (last: %s)", spent, v.describe(snippet)))
	}
	if err := c.q.SaveRetry(b, toQueueState(bud.State())); err != nil {
		c.log.Warn("save retry state", "error", err)
	}
	c.mu.Lock()
	if path == PathRateLimit {
		c.counters.RetriesRateLimit++
	} else {
		c.counters.RetriesBackoff++
	}
	c.mu.Unlock()
	c.setState(func(s *workerState) { s.Attempt = bud.Attempts() })
	attrs := []any{"path", path, "attempt", bud.Attempts(), "wait", wait.String(), "events", len(b.Events)}
	if v.status != 0 {
		attrs = append(attrs, "status", v.status)
	}
	if v.errClass != "" {
		attrs = append(attrs, "error_class", v.errClass, "error", v.err)
	}
	c.log.Warn("upload failed; retrying", attrs...)
	if c.hooks.OnRetry != nil {
		c.hooks.OnRetry(path, wait)
	}
	return action{kind: actWait, path: path, wait: wait, err: v.asError(snippet)}
}

// ack starts removing a delivered batch; the worker goes on with the next batches while the
// ack commits. The acker books it (counters, log line, OnDelivered) as soon as it commits, and
// the worker settles it (waits for it) at its next settle point (see settle).
func (c *Client) ack(b *queue.Batch, info BatchInfo) action {
	return orRestart(action{kind: actDone}, c.startAck(b, info))
}

// notSent returns act for an attempt that ended before its request was sent, after settling
// the previous batch's ack: when that ack failed, the worker restarts from the head instead.
func (c *Client) notSent(act action) action {
	return orRestart(act, c.settle())
}

// orRestart is act, or a restart from the head when the previous batch's ack failed.
func orRestart(act action, ackErr error) action {
	if ackErr != nil {
		return action{kind: actRestart, err: ackErr}
	}
	return act
}

// dead moves a batch to the dead letters with its reason.
func (c *Client) dead(b *queue.Batch, info BatchInfo, snippet []byte, t *tracker, reason string) action {
	d := queue.DeadInfo{
		Reason:       reason,
		ErrorClass:   info.Error,
		Status:       info.Status,
		Attempts:     info.Attempts,
		FirstAttempt: t.first,
		LastAttempt:  c.now(),
		Body:         snippet,
	}
	if err := c.q.DeadLetter(b, d); err != nil {
		c.log.Error("dead-letter a batch; it stays queued", "error", err)
		return action{kind: actPause, err: err}
	}
	c.mu.Lock()
	c.counters.EventsDead += int64(info.Events)
	c.counters.BatchesDead++
	c.mu.Unlock()
	c.log.Info("batch dead-lettered", "events", info.Events, "attempts", info.Attempts, "status", info.Status, "reason", reason)
	if c.hooks.OnDeadLetter != nil {
		c.hooks.OnDeadLetter(info, reason)
	}
	return action{kind: actDone}
}

// recordResult updates the upload part of the worker state after an attempt.
func (c *Client) recordResult(code string, ok bool) {
	now := c.now()
	c.setState(func(s *workerState) {
		s.LastAttempt, s.LastResult = now, code
		if ok {
			s.LastSuccess, s.FailingSince = now, time.Time{}
		} else if s.FailingSince.IsZero() {
			s.FailingSince = now
		}
	})
}

// resultCode names a failure that happened before sending.
func resultCode(err error) string {
	var he *HookError
	if errors.As(err, &he) {
		return "hook_error"
	}
	return "config_error"
}

// pathOf is the retry path an action takes, for AttemptInfo.
func pathOf(a action) string {
	if a.kind == actWait {
		return a.path
	}
	return PathNone
}

// describe says what the collector or network answered, for logs and dead-letter reasons.
func (v verdict) describe(snippet []byte) string {
	if v.status != 0 {
		return (&StatusError{Status: v.status, Body: snippet}).Error()
	}
	if v.err != nil {
		return fmt.Sprintf("%s network error: %v", v.errClass, v.err)
	}
	return v.code()
}

// asError is the failure as an error value.
func (v verdict) asError(snippet []byte) error {
	if v.status != 0 {
		return &StatusError{Status: v.status, Body: snippet}
	}
	return v.err
}

// code is the status or error class, as in AttemptInfo.Code.
func (v verdict) code() string {
	if v.status != 0 {
		return strconv.Itoa(v.status)
	}
	if v.errClass != "" {
		return v.errClass
	}
	return "error"
}

func fromQueueState(s queue.RetryState) budget.State {
	return budget.State{Attempts: s.Attempts, Retries: s.Retries, BackoffStart: s.BackoffStart, RateLimitStart: s.RateLimitStart}
}

func toQueueState(s budget.State) queue.RetryState {
	return queue.RetryState{Attempts: s.Attempts, Retries: s.Retries, BackoffStart: s.BackoffStart, RateLimitStart: s.RateLimitStart}
}
