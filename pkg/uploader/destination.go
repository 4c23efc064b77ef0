package uploader

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/delivery"
)

// A client delivers to one destination (pkg/delivery's seam): given ready-made with
// WithDestination (a kafka.Destination, one of an application's own), or built by a
// DestinationFunc once Open has read the configuration and the store, which is how
// segment.Open (pkg/segment) builds the HTTP destination of the upload.* keys. The uploader
// itself knows no destination: it reads what an answer means from delivery.Outcome.

// DestinationFunc builds a client's destination from what Open has read (see
// DestinationParams). An error fails Open.
type DestinationFunc func(DestinationParams) (delivery.Destination, error)

// DestinationParams is what Open hands a DestinationFunc.
type DestinationParams struct {
	// Upload is the upload.* configuration.
	Upload UploadConfig
	// Routes gives each source's endpoint, write key and headers (sources.<name>.* and the
	// relay sources of the store's registry); it may be called for every attempt, from
	// several goroutines at once.
	Routes delivery.RoutesFunc
	// Clock is the client's clock (WithClock; budget.System by default).
	Clock budget.Clock
	// Logger is the client's logger (WithLogger; never nil).
	Logger *slog.Logger
	// HTTPClient, Transport, Hook and Classify are the HTTP options (WithHTTPClient,
	// WithTransport, WithRequestHook, WithClassifier); nil when not given.
	HTTPClient *http.Client
	Transport  http.RoundTripper
	Hook       func(*http.Request) error
	Classify   func(*http.Response, error, time.Time) delivery.Outcome
}

// credentialSetter is a destination whose write key and headers a reload of upload.write_key
// and upload.headers changes (the HTTP destination's SetCredentials).
type credentialSetter interface {
	SetCredentials(writeKey string, headers map[string]string)
}
