package delivery

import "context"

// Destination is where the worker delivers batches. The worker owns the queue side (leases,
// acks, retry budgets, splits and dead letters); a destination only sends one batch and says
// what happened, as an Outcome:
//
//	ClassSuccess      the destination has every event of the batch: it is acked
//	ClassRateLimited  the destination asked to wait RetryAfter: the rate-limit budget
//	ClassRetryable    a transient failure (NetError says never_sent or maybe_sent for the
//	                  network): the counted backoff budget
//	ClassTooLarge     the batch (or one event of it) is over the destination's size limit:
//	                  split in half, a single event is dead-lettered
//	ClassRejected     refused for good: dead-lettered with Detail (or split, for a 400/422
//	                  of the HTTP destination, to isolate the bad events)
//	ClassAborted      nothing was sent because of us (a request hook, our configuration):
//	                  no budget is spent and the batch stays queued
//	ClassAuthRefused  the destination refused our credentials: delivery pauses, the batch
//	                  stays queued and the head batch is probed about once a minute
//	                  (upload.on_auth_failure: dead_letter takes the rejected way instead)
//
// The HTTP destination (pkg/httpdest), to a Segment-compatible collector, is the default one:
// segment.Open (pkg/segment) builds it. Others live in their own packages (pkg/kafka) and are
// passed to uploader.Open with uploader.WithDestination, so an application that does not use
// them does not link them.
type Destination interface {
	// Name names the kind of destination for status and logs ("http", "kafka").
	Name() string
	// Send delivers one batch. It must return soon after ctx ends (Close's deadline, or the
	// per-attempt upload.timeout); the worker then treats the attempt as cut short, not as an
	// outcome. It is called for one batch at a time, unless the destination implements
	// BoundedDestination (then from several goroutines at once, up to its bound).
	Send(ctx context.Context, b Batch) Outcome
	// Close releases the destination's connections. The client calls it once, after the
	// worker's last Send.
	Close() error
}

// BoundedDestination is implemented by a destination that can take several batches at once
// (its Send is safe for concurrent use): MaxInFlight bounds how many (0: no bound of its own;
// upload.concurrency and upload.max_concurrency still apply). A destination that does not
// implement it gets one batch at a time, as Destination documents.
type BoundedDestination interface {
	Destination
	MaxInFlight() int
}

// Batch is one batch as a destination sees it.
type Batch struct {
	// Events are the stored event JSON objects, oldest first, to be sent as they are (spliced,
	// never re-encoded). They are read-only and valid until Send returns: the worker reuses
	// their memory for later batches, so a destination that needs them longer copies them.
	Events [][]byte
	// Source is the name of the source every event of the batch belongs to (a batch never
	// mixes sources): the HTTP destination uploads it with that source's write key, endpoint
	// and headers. "" and "default" are the default source.
	Source string
	// Retry is how many attempts of this batch came before this one (0 on its first), the
	// HTTP destination's X-Retry-Count.
	Retry int
	// Prepared is the payload a PreparingDestination built ahead of this attempt with
	// Prepare, or nil (every retry, and any destination that does not prepare). Send owns it:
	// it sends it or releases it.
	Prepared any
}

// PreparingDestination is a Destination that builds a batch's payload ahead of its first
// attempt, while the batch before it is in flight (the HTTP destination builds its gzipped
// body so). The worker calls Prepare on the goroutine that leases the next batch and hands
// the payload to Send in Batch.Prepared; a payload that will not be sent (the client stops,
// the lease fails) goes back through Release. Prepare may return nil: Send then builds its
// payload itself.
type PreparingDestination interface {
	Destination
	Prepare(events [][]byte) any
	Release(payload any)
}

// Route is where the batches of one source go (sources.<name>.*), for a destination that
// posts them to an endpoint with a write key (the HTTP destination): its endpoint, the write
// key sent as Basic auth, and headers set over the destination's own.
type Route struct {
	// Endpoint is the source's batch URL; "" is the destination's own.
	Endpoint string
	// WriteKey is sent as Basic auth; "" sends no Authorization (never another source's key).
	WriteKey string
	// Headers are set after the destination's own, so a source's header wins over the shared one.
	Headers map[string]string
}

// RoutesFunc returns the route of a source, false when it has none. It is called for every
// attempt of a batch whose Source is set, from several goroutines at once.
type RoutesFunc func(source string) (Route, bool)
