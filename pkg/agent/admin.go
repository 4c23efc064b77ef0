package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/uploader"
)

// maxFlushWait bounds ?wait= on POST /v1/flush, and a background flush without it.
const maxFlushWait = time.Hour

// FlushResult is the JSON answer of POST /v1/flush.
type FlushResult struct {
	// Done is true when the queue was empty when the answer was written.
	Done bool `json:"done"`
	// Queue is what is left.
	Queue QueueStatus `json:"queue"`
	// Waiting is set when the worker waits on a retry budget, so the queue will not empty
	// before Waiting.Until.
	Waiting *FlushWaiting `json:"waiting,omitempty"`
	// Error is set when the flush failed for another reason (the client is closed, …).
	Error string `json:"error,omitempty"`
}

// FlushWaiting names the budget the worker waits on and until when.
type FlushWaiting struct {
	Path  string    `json:"path"` // rate_limit | backoff
	Until time.Time `json:"until"`
}

// handleFlush serves POST /v1/flush. Without ?wait the flush starts in the background and
// the answer (202) reports the queue as it is; with ?wait=<duration> the answer (200) comes
// when the queue is empty, the wait ends, or the worker waits on a budget (then "waiting"
// says which and until when).
func (a *Agent) handleFlush(w http.ResponseWriter, r *http.Request) {
	waitParam := r.URL.Query().Get("wait")
	if waitParam == "" {
		a.audit(r, "flush", "events", a.client.Stats().Queue.Events)
		a.flushInBackground()
		res := a.flushResult(nil)
		code := http.StatusAccepted
		if res.Done {
			code = http.StatusOK
		}
		writeJSON(w, code, res)
		return
	}
	wait, err := time.ParseDuration(waitParam)
	if err != nil || wait <= 0 || wait > maxFlushWait {
		writeError(w, http.StatusBadRequest,
			fmt.Sprintf("wait=%q: want a duration between 1ms and %s, for example wait=30s", waitParam, maxFlushWait))
		return
	}
	a.audit(r, "flush", "wait", wait.String(), "events", a.client.Stats().Queue.Events)
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	err = a.client.Flush(ctx)
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
		err = nil // the wait ended: report what is left
	}
	writeJSON(w, http.StatusOK, a.flushResult(err))
}

// flushResult builds the answer from the client's stats and Flush's error.
func (a *Agent) flushResult(err error) FlushResult {
	st := statusFromStats(a.client.Stats())
	res := FlushResult{Queue: st.Queue, Done: st.Queue.Events == 0}
	var we *uploader.WaitingError
	switch {
	case err == nil:
	case errors.As(err, &we):
		res.Waiting = &FlushWaiting{Path: we.Path, Until: we.Until.UTC()}
	default:
		res.Error = err.Error()
	}
	return res
}

// flushInBackground starts a Flush bounded by maxFlushWait unless one is already running.
// It ends at the latest when the client is closed.
func (a *Agent) flushInBackground() {
	if !a.flushing.CompareAndSwap(false, true) {
		return
	}
	a.bg.Go(func() {
		defer a.flushing.Store(false)
		ctx, cancel := context.WithTimeout(a.baseCtx, maxFlushWait)
		defer cancel()
		if err := a.client.Flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
			a.log.Debug("background flush ended", "err", err)
		}
	})
}

// handleHealthz serves GET /healthz: the process is up.
func (a *Agent) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is the JSON answer of GET /readyz.
type readiness struct {
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// handleReadyz serves GET /readyz: 200 when intake can persist, 503 with the reason when the
// agent is shutting down, the store is failing, or the queue is full under when_full: reject.
// Upload failures do not count.
func (a *Agent) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	if reason := a.unreadyReason(); reason != "" {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, readiness{Reason: reason})
		return
	}
	writeJSON(w, http.StatusOK, readiness{Ready: true})
}
