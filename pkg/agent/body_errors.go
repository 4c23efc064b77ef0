package agent

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

const (
	// maxPreAuthBodies bounds the requests whose body is read before their credential is
	// known (a batch carrying its write key as the body's writeKey): at most this many
	// bodies of limits.max_request_bytes are held by senders nobody has authenticated yet.
	maxPreAuthBodies = 32
	// preAuthReadTimeout bounds how long such a body may take to arrive (the server's read
	// timeout, 60 s, bounds the others): a slow sender cannot hold a slot long.
	preAuthReadTimeout = 10 * time.Second
)

// bodyFailed answers a request whose body could not be read: 413 with the size and the limit
// (and, on a one-event route, the per-event limit the event breaks as well), 408 when it did
// not arrive in time, 400 otherwise.
func (a *Agent) bodyFailed(w http.ResponseWriter, err error, single bool) {
	var tl *bodyTooLargeError
	switch {
	case errors.As(err, &tl):
		writeError(w, http.StatusRequestEntityTooLarge, a.tooLargeMessage(tl, single))
	case errors.Is(err, errBodyTimeout):
		writeError(w, http.StatusRequestTimeout, "the request body did not arrive in time; send it in one go, "+
			"or in smaller requests")
	default:
		writeError(w, http.StatusBadRequest, err.Error())
	}
}

// tooLargeMessage says how large the body is, against which limit, and what to do.
func (a *Agent) tooLargeMessage(tl *bodyTooLargeError, single bool) string {
	size := fmt.Sprintf("is more than %d bytes", a.cfg.MaxRequestBytes)
	if tl.exact {
		size = fmt.Sprintf("is %d bytes", tl.size)
	}
	if !single {
		return fmt.Sprintf("request body %s, over the limit of %d bytes (limits.max_request_bytes, measured after gzip "+
			"decompression); send smaller batches", size, a.cfg.MaxRequestBytes)
	}
	msg := fmt.Sprintf("event %s, over the request limit of %d bytes (limits.max_request_bytes, measured after gzip "+
		"decompression)", size, a.cfg.MaxRequestBytes)
	if tl.size > int64(a.cfg.MaxEventBytes) {
		msg += fmt.Sprintf(" and the event limit of %d bytes (limits.max_event_bytes)", a.cfg.MaxEventBytes)
	}
	return msg + "; send a smaller event"
}
