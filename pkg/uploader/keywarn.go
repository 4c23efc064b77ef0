package uploader

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// warnMissingWriteKey logs at warn, once at Open, when batches would go to Segment's API with
// no credentials: Segment refuses every one of them (401), which pauses delivery. A program
// that copied an example and set neither upload.write_key nor upload.endpoint hears of it at
// start, not from a paused queue later. A request hook or an Authorization header may bring
// their own credentials, so neither warns.
func warnMissingWriteKey(log *slog.Logger, u UploadConfig, hook func(*http.Request) error) {
	if u.WriteKey != "" || hook != nil {
		return
	}
	for k := range u.Headers {
		if strings.EqualFold(k, "Authorization") {
			return
		}
	}
	if !isSegmentEndpoint(u.Endpoint) {
		return
	}
	log.Warn("upload.write_key is empty and upload.endpoint is Segment's API, which refuses batches without a write key (401) and so pauses delivery: set the write key (Config.Upload.WriteKey; OUTBOX_UPLOAD_WRITE_KEY for the agent), or point upload.endpoint at your own collector",
		"endpoint", u.Endpoint)
}

// isSegmentEndpoint reports whether endpoint is one of Segment's tracking API hosts
// (api.segment.io, and the regional *.segmentapis.com).
func isSegmentEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return host == "segment.io" || strings.HasSuffix(host, ".segment.io") || strings.HasSuffix(host, ".segmentapis.com")
}
