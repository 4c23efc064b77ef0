package uploader

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"

	"github.com/outboxhq/outbox/pkg/budget"
)

// Option configures Open.
type Option func(*options)

type options struct {
	httpClient  *http.Client
	transport   http.RoundTripper
	hook        func(*http.Request) error
	logger      *slog.Logger
	clock       budget.Clock
	classify    func(*http.Response, error, time.Time) delivery.Outcome
	rand        budget.RandFunc
	hooks       Hooks
	destination delivery.Destination
	destFunc    DestinationFunc
	ackFault    func() error // white-box tests: an error fails an ack group before it reaches the queue
}

// The HTTP options are handed to the DestinationFunc (DestinationParams): the HTTP destination
// that segment.Open builds takes them; a destination given with WithDestination does not.

// WithHTTPClient sets the HTTP destination's client (httpdest.Config.HTTPClient). It uses a
// shallow copy whose CheckRedirect is replaced by its own policy (only 307/308, at most 3 hops,
// never https→http) and whose Timeout is left as given; upload.timeout is applied per attempt
// through the request context.
func WithHTTPClient(hc *http.Client) Option { return func(o *options) { o.httpClient = hc } }

// WithTransport sets the RoundTripper of the HTTP destination's default client
// (upload.ca_file is then ignored).
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithRequestHook sets the HTTP destination's per-attempt request hook. An error from it is
// reported as itself (an *httpdest.HookError), is not a network error, spends no budget, and
// the batch stays queued; the worker tries again after batch.interval.
func WithRequestHook(h func(*http.Request) error) Option { return func(o *options) { o.hook = h } }

// WithLogger sets the logger; nil discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithClock sets the clock of the budgets, the batch interval and every wait (tests pass a
// budgettest.Clock). Default budget.System.
func WithClock(c budget.Clock) Option { return func(o *options) { o.clock = c } }

// WithClassifier replaces the HTTP destination's response classifier (default
// httpdest.Classify, which a classifier of one's own may wrap).
func WithClassifier(f func(*http.Response, error, time.Time) delivery.Outcome) Option {
	return func(o *options) { o.classify = f }
}

// WithRand sets the random source of the backoff jitter, a func returning values in [0, 1).
func WithRand(f func() float64) Option { return func(o *options) { o.rand = f } }

// WithHooks sets the callbacks.
func WithHooks(h Hooks) Option { return func(o *options) { o.hooks = h } }

// WithDestination sets the destination: the worker delivers every batch to d (for example a
// kafka.Destination from pkg/kafka) with the same queue, budgets, splits and dead letters. It
// wins over a DestinationFunc, so the HTTP options and the upload.* keys of the HTTP
// destination are then not used. The client closes d when it closes, and when Open fails.
func WithDestination(d delivery.Destination) Option { return func(o *options) { o.destination = d } }

// WithDestinationFunc makes Open build the destination with f once it has read the
// configuration (segment.Open passes the HTTP destination's). WithDestination wins over it.
func WithDestinationFunc(f DestinationFunc) Option { return func(o *options) { o.destFunc = f } }
