package agent

import (
	"net/http"
	"strings"
)

// audit writes the log line of one admin action: who (the credential kind the admin gate let
// the request in with, and its remote address), what (action), and its counts in attrs
// (events, batches, ids). Reads of event data (dead_list, dead_show) are actions too: they
// show events, emails included, to whoever asks.
func (a *Agent) audit(r *http.Request, action string, attrs ...any) {
	a.log.Info("admin action", append([]any{"action", action, "credential", adminCredentialOf(r),
		"remote_addr", r.RemoteAddr}, attrs...)...)
}

// auditIDs names the batches an action was asked for: "all" when none was named.
func auditIDs(ids []string) string {
	if len(ids) == 0 {
		return "all"
	}
	return strings.Join(ids, ",")
}
