package agent

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// handleBatch serves POST /v1/batch and /v1/import: a Segment batch body, all-or-nothing.
func (a *Agent) handleBatch(w http.ResponseWriter, r *http.Request) {
	a.ingest(w, r, false, func(body []byte) ([][]byte, int, error) {
		return event.ParseBatchSuppressed(body, a.client.IntakeOptions(a.evOpts))
	})
}

// handleSingle serves POST /v1/<typ>: one event whose type is set by the route.
func (a *Agent) handleSingle(typ string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.ingest(w, r, true, func(body []byte) ([][]byte, int, error) {
			ev, err := event.Normalize(body, typ, a.client.IntakeOptions(a.evOpts))
			if errors.Is(err, event.ErrSuppressed) {
				return nil, 1, nil
			}
			if err != nil {
				return nil, 0, err
			}
			return [][]byte{ev}, 0, nil
		})
	}
}

// ingest runs one ingest request: admit (503 once shutting down), read the body under the
// limits (413), parse (400 with the index of the bad event; nothing is stored), enqueue
// durably, and only then answer 200 {"success":true}. single is set on the one-event routes.
// parse scrubs the events and leaves out those of suppressed users, which are counted as
// dropped and answered 200 like the others.
func (a *Agent) ingest(w http.ResponseWriter, r *http.Request, single bool, parse func([]byte) ([][]byte, int, error)) {
	done, ok := a.enter()
	if !ok {
		writeUnavailable(w, "outbox is shutting down; retry against the restarted agent")
		return
	}
	defer done()

	if needsBodyKey(r) {
		// The credential is in the body: until it is read nobody knows who sent it, so such
		// reads are bounded in number and in time.
		select {
		case a.preAuth <- struct{}{}:
			defer func() { <-a.preAuth }()
		default:
			// Closing the connection spares reading the rest of the body (the server would
			// otherwise drain it before answering, to keep the connection).
			w.Header().Set("Connection", "close")
			writeUnavailable(w, "too many requests carrying their write key in the body at once; retry, or send the "+
				"write key as the Basic auth user name (what Segment SDKs send)")
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(preAuthReadTimeout))
	}
	body, err := a.body.read(w, r)
	if err != nil {
		a.bodyFailed(w, err, single)
		return
	}

	// The events are the body's bytes (ParseBatch does not copy them), and the store has
	// copied them once EnqueueNormalized returns, committed or not: the buffer is free again
	// when the handler is done.
	defer body.release()
	ok, c, bodyKey := bodyKeyAllowed(r, body.Bytes())
	if !ok {
		a.refuse.refused(r, bodyKey)
		unauthorized(w, c)
		return
	}
	source, ok := a.selectSource(w, r, body.Bytes(), bodyKey)
	if !ok {
		return
	}
	events, suppressed, err := parse(body.Bytes())
	if err != nil {
		var ee *event.Error
		if errors.As(err, &ee) && ee.Index >= 0 {
			writeIndexError(w, ee.Error(), ee.Index)
			return
		}
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	a.client.CountSuppressed(suppressed)
	if len(events) == 0 {
		writeSuccess(w)
		return
	}
	if err := a.client.EnqueueNormalizedIn(r.Context(), source, events...); err != nil {
		a.enqueueFailed(w, r, err)
		return
	}
	a.health.ok()
	a.full.clear()
	writeSuccess(w)
}

// enqueueFailed answers a failed EnqueueNormalized with 503 + Retry-After and records store
// failures for /readyz.
func (a *Agent) enqueueFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errs.ErrTooLarge):
		// Permanent: no Retry-After, and the queue is not full for anyone else.
		writeError(w, http.StatusRequestEntityTooLarge,
			"the request's events exceed queue.max_bytes and can never be queued; send fewer or smaller events, or raise queue.max_bytes")
	case errors.Is(err, errs.ErrSourceFull):
		sourceFull(w, err)
	case errors.Is(err, uploader.ErrSourceRemoved):
		// A reload removed the source this request's key selected as it arrived: the retry
		// goes where the key points now.
		writeUnavailable(w, "the source of this request's write key was removed by a configuration reload; retry")
	case errors.Is(err, errs.ErrQueueFull):
		a.full.set(a.client.Stats().Queue.Bytes)
		writeUnavailable(w, "queue is full (queue.max_bytes reached); retry later")
	case errors.Is(err, errs.ErrClosed):
		writeUnavailable(w, "outbox is shutting down; retry against the restarted agent")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if r.Context().Err() != nil {
			// The client went away; nothing was acknowledged.
			writeUnavailable(w, "request cancelled before the events were stored")
			return
		}
		a.storeFailed(w, err)
	default:
		a.storeFailed(w, err)
	}
}

// storeFailed reports a persistence failure: logged, remembered for /readyz, answered 503.
func (a *Agent) storeFailed(w http.ResponseWriter, err error) {
	a.health.failed(err)
	a.log.Error("ingest could not persist events", "err", err)
	writeUnavailable(w, "events could not be stored (store failing); retry later")
}
