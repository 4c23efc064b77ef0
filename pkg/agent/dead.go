package agent

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// maxAdminBody bounds the JSON body of the dead-letter admin routes.
const maxAdminBody = 1 << 20

// DeadBatch is one dead-letter batch as the admin API shows it.
type DeadBatch struct {
	ID           string     `json:"id"`
	At           time.Time  `json:"at"`     // when it was dead-lettered
	Reason       string     `json:"reason"` // e.g. "rejected", "budget_spent"
	ErrorClass   string     `json:"error_class,omitempty"`
	Status       int        `json:"status,omitempty"` // last HTTP status
	Attempts     int        `json:"attempts"`
	FirstAttempt *time.Time `json:"first_attempt,omitempty"`
	LastAttempt  *time.Time `json:"last_attempt,omitempty"`
	Response     string     `json:"response,omitempty"` // snippet of the collector's answer
	Events       int        `json:"events"`
	Bytes        int64      `json:"bytes"`
	// Batch holds the events themselves; only GET /v1/dead/{id} fills it.
	Batch []json.RawMessage `json:"batch,omitempty"`
}

// DeadList is the answer of GET /v1/dead, oldest batch first.
type DeadList struct {
	Batches []DeadBatch `json:"batches"`
}

// DeadRequest is the body of POST /v1/dead/replay and /v1/dead/purge: the batch ids, or All.
// Replay with neither replays every batch; purge requires one of them.
type DeadRequest struct {
	IDs []string `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// DeadReplayResult is the answer of POST /v1/dead/replay.
type DeadReplayResult struct {
	Events int `json:"events"` // events moved back to the queue
}

// DeadPurgeResult is the answer of POST /v1/dead/purge.
type DeadPurgeResult struct {
	Batches int `json:"batches"` // batches deleted
}

// NewDeadBatch converts a queue dead-letter batch to its admin API form (events included
// when d has them), for offline tools that read the queue directly.
func NewDeadBatch(d uploader.DeadBatch) DeadBatch {
	out := DeadBatch{
		ID: d.ID, At: d.At.UTC(), Reason: d.Info.Reason, ErrorClass: d.Info.ErrorClass,
		Status: d.Info.Status, Attempts: d.Info.Attempts,
		FirstAttempt: optTime(d.Info.FirstAttempt), LastAttempt: optTime(d.Info.LastAttempt),
		Response: string(d.Info.Body), Events: d.Count, Bytes: d.Bytes,
	}
	for _, ev := range d.Events {
		out.Batch = append(out.Batch, json.RawMessage(ev))
	}
	return out
}

// handleDeadList serves GET /v1/dead.
func (a *Agent) handleDeadList(w http.ResponseWriter, r *http.Request) {
	list, err := a.client.DeadLetters().List()
	if err != nil {
		a.adminFailed(w, err)
		return
	}
	out := DeadList{Batches: make([]DeadBatch, 0, len(list))}
	events := 0
	for _, d := range list {
		out.Batches = append(out.Batches, NewDeadBatch(d))
		events += d.Count
	}
	a.audit(r, "dead_list", "batches", len(list), "events", events)
	writeJSON(w, http.StatusOK, out)
}

// handleDeadGet serves GET /v1/dead/{id}.
func (a *Agent) handleDeadGet(w http.ResponseWriter, r *http.Request) {
	d, err := a.client.DeadLetters().Get(r.PathValue("id"))
	if err != nil {
		a.adminFailed(w, err)
		return
	}
	a.audit(r, "dead_show", "dead_id", d.ID, "events", d.Count)
	writeJSON(w, http.StatusOK, NewDeadBatch(d))
}

// handleDeadReplay serves POST /v1/dead/replay.
func (a *Agent) handleDeadReplay(w http.ResponseWriter, r *http.Request) {
	dr, ok := readDeadRequest(w, r)
	if !ok {
		return
	}
	n, err := a.client.DeadLetters().Replay(r.Context(), dr.IDs...)
	if err != nil {
		a.adminFailed(w, err)
		return
	}
	a.audit(r, "dead_replay", "ids", auditIDs(dr.IDs), "events", n)
	writeJSON(w, http.StatusOK, DeadReplayResult{Events: n})
}

// handleDeadPurge serves POST /v1/dead/purge; it needs ids or "all":true.
func (a *Agent) handleDeadPurge(w http.ResponseWriter, r *http.Request) {
	dr, ok := readDeadRequest(w, r)
	if !ok {
		return
	}
	if len(dr.IDs) == 0 && !dr.All {
		writeError(w, http.StatusBadRequest, `purge needs batch ids ({"ids":[...]}) or {"all":true}`)
		return
	}
	// The events a purge deletes are counted as dropped (reason "purged") by the store; the
	// audit line takes their number from that counter.
	before := a.client.Stats().Queue.Dropped[uploader.DropReasonPurged]
	n, err := a.client.DeadLetters().Purge(r.Context(), dr.IDs...)
	if err != nil {
		a.adminFailed(w, err)
		return
	}
	a.audit(r, "dead_purge", "ids", auditIDs(dr.IDs), "batches", n,
		"events", a.client.Stats().Queue.Dropped[uploader.DropReasonPurged]-before)
	writeJSON(w, http.StatusOK, DeadPurgeResult{Batches: n})
}

// readDeadRequest decodes an optional DeadRequest body; ids and all together are refused.
func readDeadRequest(w http.ResponseWriter, r *http.Request) (DeadRequest, bool) {
	var dr DeadRequest
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
		return dr, false
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &dr); err != nil {
			writeError(w, http.StatusBadRequest, `want {"ids":["<id>",...]} or {"all":true}: `+err.Error())
			return dr, false
		}
	}
	if dr.All && len(dr.IDs) > 0 {
		writeError(w, http.StatusBadRequest, `give either "ids" or "all", not both`)
		return dr, false
	}
	return dr, true
}

// adminFailed answers a failed dead-letter operation.
func (a *Agent) adminFailed(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errs.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, errs.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "the dead batches exceed queue.max_bytes together; replay fewer batches at a time")
	case errors.Is(err, errs.ErrQueueFull):
		writeUnavailable(w, "the dead batches do not fit in the queue (queue.max_bytes); let it drain first")
	case errors.Is(err, errs.ErrClosed):
		writeUnavailable(w, "outbox is shutting down")
	default:
		a.log.Error("dead-letter operation failed", "err", err)
		writeUnavailable(w, "dead-letter operation failed: "+err.Error())
	}
}
