package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// ForgetRequest is the body of POST /v1/forget: the users whose queued and dead-lettered
// events are deleted (their userId or anonymousId), and whether to add them to the suppress
// list too. With Unsuppress the ids are taken off the suppress list instead, and nothing is
// deleted.
type ForgetRequest struct {
	UserIDs      []string `json:"user_ids,omitempty"`
	AnonymousIDs []string `json:"anonymous_ids,omitempty"`
	Suppress     bool     `json:"suppress,omitempty"`
	Unsuppress   bool     `json:"unsuppress,omitempty"`
}

// ForgetResult is the answer of POST /v1/forget: the events deleted, per source that lost
// any ("default" alone when none did) and in all. It names no user.
type ForgetResult struct {
	Sources      []ForgetSource `json:"sources"`
	Queued       int            `json:"queued"`       // events deleted from the queue, all sources
	Dead         int            `json:"dead"`         // events deleted from dead batches, all sources
	Suppressed   bool           `json:"suppressed"`   // the ids were added to the suppress list
	Unsuppressed bool           `json:"unsuppressed"` // the ids were taken off the suppress list
	IDs          int            `json:"ids"`          // ids named in the request
}

// ForgetSource is what a forget deleted from one source's events.
type ForgetSource struct {
	Source      string `json:"source"`
	Queued      int    `json:"queued"`
	Dead        int    `json:"dead"`
	DeadBatches int    `json:"dead_batches"` // dead batches deleted because every event in them was
}

// NewForgetResult converts the uploader's result to the admin API's form, for offline tools
// that forget on the data directory directly.
func NewForgetResult(res uploader.ForgetResult, req ForgetRequest) ForgetResult {
	out := ForgetResult{Sources: []ForgetSource{}, Suppressed: req.Suppress, IDs: len(req.UserIDs) + len(req.AnonymousIDs)}
	for _, s := range res.Sources {
		out.Sources = append(out.Sources, ForgetSource{Source: s.Source, Queued: s.Queued, Dead: s.Dead, DeadBatches: s.DeadBatches})
		out.Queued += s.Queued
		out.Dead += s.Dead
	}
	return out
}

// handleForget serves POST /v1/forget. It answers once the events are deleted and no batch
// being sent holds one of them any more.
func (a *Agent) handleForget(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	var fr ForgetRequest
	if err := json.Unmarshal(b, &fr); err != nil {
		writeError(w, http.StatusBadRequest, `want {"user_ids":["<id>",...],"anonymous_ids":[...],"suppress":false}: `+err.Error())
		return
	}
	if len(fr.UserIDs)+len(fr.AnonymousIDs) == 0 {
		writeError(w, http.StatusBadRequest, `name at least one user: "user_ids" or "anonymous_ids"`)
		return
	}
	if fr.Suppress && fr.Unsuppress {
		writeError(w, http.StatusBadRequest, `give either "suppress" or "unsuppress", not both`)
		return
	}
	if fr.Unsuppress {
		if err := a.client.Unsuppress(append(fr.UserIDs, fr.AnonymousIDs...)...); err != nil {
			a.forgetFailed(w, err)
			return
		}
		// The audit line counts the ids and never names them: they identify people.
		a.audit(r, "unsuppress", "ids", len(fr.UserIDs)+len(fr.AnonymousIDs))
		writeJSON(w, http.StatusOK, ForgetResult{Sources: []ForgetSource{}, Unsuppressed: true, IDs: len(fr.UserIDs) + len(fr.AnonymousIDs)})
		return
	}
	res, err := a.client.Forget(r.Context(), uploader.ForgetRequest{UserIDs: fr.UserIDs, AnonymousIDs: fr.AnonymousIDs, Suppress: fr.Suppress})
	if err != nil {
		a.forgetFailed(w, err)
		return
	}
	out := NewForgetResult(res, fr)
	a.audit(r, "forget", "ids", out.IDs, "suppress", fr.Suppress, "queued_events", out.Queued, "dead_events", out.Dead)
	writeJSON(w, http.StatusOK, out)
}

// forgetFailed answers a failed forget. Its errors name no user, so they can be logged.
func (a *Agent) forgetFailed(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, uploader.ErrNoSuppressFile):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, errs.ErrClosed):
		writeUnavailable(w, "outbox is shutting down; nothing was deleted")
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		writeUnavailable(w, "the request ended before the batches being sent were done; nothing was deleted: retry")
	default:
		a.log.Error("forget failed", "err", err)
		writeUnavailable(w, "forget failed: "+err.Error())
	}
}
