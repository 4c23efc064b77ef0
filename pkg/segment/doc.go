// Package segment opens an outbox client that delivers to a Segment-compatible collector over
// HTTP: Segment's tracking API (the default upload.endpoint), an EU workspace's, or any
// endpoint that speaks the same batch format.
//
// The uploader (pkg/uploader) knows no destination of its own: it reads what an answer means
// from delivery.Outcome. This package sits above it and above the HTTP destination
// (pkg/httpdest) and wires the two together, so that opening a client with the default
// destination stays one call, for a library user as for the agent:
//
//	c, err := segment.Open(cfg, uploader.WithLogger(logger))
//
// A client with another destination (pkg/kafka's, one of an application's own) is opened
// with uploader.Open and uploader.WithDestination.
package segment
