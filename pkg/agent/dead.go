package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// maxAdminBody bounds the JSON body of the dead-letter admin routes.
const maxAdminBody = 1 << 20

// DeadBatch is one dead-letter batch as the admin API shows it.
type DeadBatch struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`     // when it was dead-lettered
	Source string    `json:"source"` // the source its events belong to
	Reason string    `json:"reason"` // one of uploader.DeadReasons: rejected, too_large, budget_spent
	// Code is the last answer's result code: its HTTP status ("429"), a Kafka error name or
	// the network error class.
	Code         string     `json:"code,omitempty"`
	Detail       string     `json:"detail,omitempty"` // why, in a sentence
	ErrorClass   string     `json:"error_class,omitempty"`
	Status       int        `json:"status,omitempty"` // last HTTP status
	Attempts     int        `json:"attempts"`
	Replays      int        `json:"replays"` // times its events were replayed before they died this time
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

// DeadRequest is the body of POST /v1/dead/replay and /v1/dead/purge: the batch ids, All, or a
// filter (its fields as uploader.ParseDeadFilter reads them, also accepted as query parameters
// instead). A filter picks the batches it matches, narrowing All; ids and a filter together
// are refused. Replay with none of them replays every batch; purge needs one of them.
type DeadRequest struct {
	IDs    []string `json:"ids,omitempty"`
	All    bool     `json:"all,omitempty"`
	Source string   `json:"source,omitempty"`
	Since  string   `json:"since,omitempty"` // RFC 3339, or a duration ago ("2h", "7d")
	Until  string   `json:"until,omitempty"`
	Status string   `json:"status,omitempty"` // the last answer's code: 429, NOT_ENOUGH_REPLICAS, maybe_sent
	Reason string   `json:"reason,omitempty"` // rejected, too_large or budget_spent
}

// filterText is the filter fields the request sets, by name.
func (dr DeadRequest) filterText() map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{"source": dr.Source, "since": dr.Since, "until": dr.Until, "status": dr.Status, "reason": dr.Reason} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// DeadReplayResult is the answer of POST /v1/dead/replay.
type DeadReplayResult struct {
	Batches int `json:"batches"` // dead batches replayed
	Events  int `json:"events"`  // events moved back to the queue
}

// DeadPurgeResult is the answer of POST /v1/dead/purge.
type DeadPurgeResult struct {
	Batches int `json:"batches"` // batches deleted
	Events  int `json:"events"`  // their events, counted as dropped (reason purged)
}

// NewDeadBatch converts a queue dead-letter batch to its admin API form (events included
// when d has them), for offline tools that read the queue directly.
func NewDeadBatch(d uploader.DeadBatch) DeadBatch {
	out := DeadBatch{
		ID: d.ID, At: d.At.UTC(), Source: d.Info.Source, Reason: d.Info.Reason, Code: d.Info.Code, Detail: d.Info.Detail,
		ErrorClass: d.Info.ErrorClass, Status: d.Info.Status, Attempts: d.Info.Attempts, Replays: d.Info.Replays,
		FirstAttempt: optTime(d.Info.FirstAttempt), LastAttempt: optTime(d.Info.LastAttempt),
		Response: string(d.Info.Body), Events: d.Count, Bytes: d.Bytes,
	}
	for _, ev := range d.Events {
		out.Batch = append(out.Batch, json.RawMessage(ev))
	}
	return out
}

// handleDeadList serves GET /v1/dead; query parameters filter it (uploader.ParseDeadFilter).
func (a *Agent) handleDeadList(w http.ResponseWriter, r *http.Request) {
	text, ok := queryFilter(w, r)
	if !ok {
		return
	}
	f, ok := a.parseDeadFilter(w, text, "query parameter ")
	if !ok {
		return
	}
	list, err := a.client.DeadLetters().ListMatching(f)
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
	a.audit(r, "dead_list", "batches", len(list), "events", events, "filter", auditFilter(uploader.DeadFilterText(f)))
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
	dr, f, ok := a.readDeadRequest(w, r)
	if !ok {
		return
	}
	var res DeadReplayResult
	var err error
	if len(dr.IDs) > 0 {
		res.Batches = len(dr.IDs)
		res.Events, err = a.client.DeadLetters().Replay(r.Context(), dr.IDs...)
	} else {
		var dres uploader.DeadResult
		dres, err = a.client.DeadLetters().ReplayMatching(r.Context(), f)
		res = DeadReplayResult{Batches: dres.Batches, Events: dres.Events}
	}
	if err != nil {
		a.adminFailed(w, err)
		return
	}
	a.audit(r, "dead_replay", "ids", auditDeadIDs(dr.IDs, f), "batches", res.Batches, "events", res.Events,
		"filter", auditFilter(uploader.DeadFilterText(f)))
	writeJSON(w, http.StatusOK, res)
}

// handleDeadPurge serves POST /v1/dead/purge; it needs ids, a filter or "all":true, so that
// nothing is purged whole by an empty request.
func (a *Agent) handleDeadPurge(w http.ResponseWriter, r *http.Request) {
	dr, f, ok := a.readDeadRequest(w, r)
	if !ok {
		return
	}
	if len(dr.IDs) == 0 && !dr.All && f.IsZero() {
		writeError(w, http.StatusBadRequest, `purge needs batch ids ({"ids":[...]}), a filter ({"reason":"rejected"}, or ?reason=rejected) or {"all":true}`)
		return
	}
	var res DeadPurgeResult
	if len(dr.IDs) > 0 {
		// The events a purge deletes are counted as dropped (reason "purged") by the store;
		// their number comes from that counter.
		before := a.client.Stats().Queue.Dropped[uploader.DropReasonPurged]
		n, err := a.client.DeadLetters().Purge(r.Context(), dr.IDs...)
		if err != nil {
			a.adminFailed(w, err)
			return
		}
		res = DeadPurgeResult{Batches: n, Events: int(a.client.Stats().Queue.Dropped[uploader.DropReasonPurged] - before)}
	} else {
		dres, err := a.client.DeadLetters().PurgeMatching(r.Context(), f)
		if err != nil {
			a.adminFailed(w, err)
			return
		}
		res = DeadPurgeResult{Batches: dres.Batches, Events: dres.Events}
	}
	a.audit(r, "dead_purge", "ids", auditDeadIDs(dr.IDs, f), "batches", res.Batches, "events", res.Events,
		"filter", auditFilter(uploader.DeadFilterText(f)))
	writeJSON(w, http.StatusOK, res)
}

// readDeadRequest decodes an optional DeadRequest body and its filter, from the body or the
// query (not both). ids with all, or ids with a filter, are refused.
func (a *Agent) readDeadRequest(w http.ResponseWriter, r *http.Request) (DeadRequest, uploader.DeadFilter, bool) {
	var dr DeadRequest
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
		return dr, uploader.DeadFilter{}, false
	}
	if len(b) > 0 {
		// An unknown field is refused: a misspelt filter must not widen a replay to every batch.
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&dr); err != nil {
			writeError(w, http.StatusBadRequest, `want {"ids":["<id>",...]}, {"all":true} or a filter such as {"reason":"rejected","since":"2h"}: `+err.Error())
			return dr, uploader.DeadFilter{}, false
		}
	}
	query, ok := queryFilter(w, r)
	if !ok {
		return dr, uploader.DeadFilter{}, false
	}
	text, where := dr.filterText(), "body field "
	switch {
	case len(text) > 0 && len(query) > 0:
		writeError(w, http.StatusBadRequest, "give the filter in the query or in the body, not both")
		return dr, uploader.DeadFilter{}, false
	case len(query) > 0:
		text, where = query, "query parameter "
	}
	switch {
	case dr.All && len(dr.IDs) > 0:
		writeError(w, http.StatusBadRequest, `give either "ids" or "all", not both`)
		return dr, uploader.DeadFilter{}, false
	case len(dr.IDs) > 0 && len(text) > 0:
		writeError(w, http.StatusBadRequest, `give either "ids" or a filter, not both: a filter picks the batches itself`)
		return dr, uploader.DeadFilter{}, false
	}
	f, ok := a.parseDeadFilter(w, text, where)
	return dr, f, ok
}

// queryFilter returns the request's query parameters by name; one given twice is refused.
func queryFilter(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	text := map[string]string{}
	for k, vs := range r.URL.Query() {
		if len(vs) > 1 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter %s given %d times; give it once", k, len(vs)))
			return nil, false
		}
		text[k] = vs[0]
	}
	return text, true
}

// parseDeadFilter reads a filter from text, answering 400 with what is wrong (where says where
// the value was given) when it cannot.
func (a *Agent) parseDeadFilter(w http.ResponseWriter, text map[string]string, where string) (uploader.DeadFilter, bool) {
	now := time.Now()
	if a.cfg.Clock != nil {
		now = a.cfg.Clock.Now()
	}
	f, err := uploader.ParseDeadFilter(text, now)
	if err != nil {
		writeError(w, http.StatusBadRequest, where+err.Error())
		return uploader.DeadFilter{}, false
	}
	return f, true
}

// auditDeadIDs names the batches a replay or purge was asked for: "matching" those of a filter.
func auditDeadIDs(ids []string, f uploader.DeadFilter) string {
	if len(ids) == 0 && !f.IsZero() {
		return "matching"
	}
	return auditIDs(ids)
}

// auditFilter is a filter's text for the audit line ("none" for no filter).
func auditFilter(text map[string]string) string {
	if len(text) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(text))
	for _, k := range uploader.DeadFilterFields() {
		if v, ok := text[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
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
