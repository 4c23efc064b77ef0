package httpdest

import (
	"log/slog"
	"net/http"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/delivery"
)

// Config is what the HTTP destination is built from: the upload.* keys it reads, and the seams
// an application may replace. The zero value of a seam means its default.
type Config struct {
	// Endpoint is the collector's batch URL (upload.endpoint). It is not checked here: a URL
	// that no request can be built from makes every attempt ClassAborted with a
	// *delivery.ConfigError naming upload.endpoint.
	Endpoint string
	// WriteKey is sent as Basic auth (upload.write_key); empty sends no Authorization.
	WriteKey string
	// Headers are set on every request (upload.headers), before the ones the protocol fixes.
	Headers map[string]string
	// Routes gives each source's endpoint, write key and headers (sources.<name>.*); nil:
	// every batch goes to Endpoint with WriteKey, whatever its source.
	Routes delivery.RoutesFunc
	// Gzip sends the body gzipped with Content-Encoding: gzip (upload.gzip).
	Gzip bool
	// CAFile is a PEM file of CA certificates trusted besides the system roots
	// (upload.ca_file); used by the default client only.
	CAFile string
	// MaxConcurrency is how many batches may be in flight (upload.max_concurrency): the
	// default client keeps that many idle connections to the collector, at least 4.
	MaxConcurrency int

	// HTTPClient replaces the default client. A shallow copy is used whose CheckRedirect is
	// this package's policy (only 307/308, at most 3 hops, never https→http) and whose Timeout
	// is left as given; the uploader applies upload.timeout per attempt through the context.
	HTTPClient *http.Client
	// Transport is the RoundTripper of the default client (CAFile is then ignored); unused
	// with HTTPClient.
	Transport http.RoundTripper
	// Hook is called on every attempt's request (nil: none).
	Hook RequestHook
	// Classify classifies every attempt (nil: Classify).
	Classify ClassifyFunc
	// Clock gives the body's sentAt and the time a Retry-After date is measured from (nil:
	// budget.System).
	Clock budget.Clock
	// Logger gets the error when a request cannot be built (nil: discarded).
	Logger *slog.Logger
}

// RequestHook is called on every attempt's request after its headers are set, for example to
// sign it or add a rotating credential. An error is reported as itself (wrapped in a
// *HookError), is not a network error, spends no budget, and the batch stays queued; the
// uploader's worker tries again after batch.interval.
type RequestHook func(*http.Request) error

// HookError wraps an error returned by the RequestHook. It is not a network error: it spends no
// retry budget and the batch stays queued. errors.Is/As reach the hook's own error.
type HookError struct{ Err error }

// Error returns the hook's error text with a prefix.
func (e *HookError) Error() string { return "uploader: request hook: " + e.Err.Error() }

// Unwrap returns the hook's error.
func (e *HookError) Unwrap() error { return e.Err }
