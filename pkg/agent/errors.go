package agent

import "errors"

// ErrUnauthenticated is returned by Config.Validate and New when a non-loopback listen
// address has no auth configured and ingest.allow_unauthenticated is not set.
var ErrUnauthenticated = errors.New("refusing to listen without auth on a non-loopback address")

// ErrShuttingDown is returned by Serve when Shutdown has already begun.
var ErrShuttingDown = errors.New("agent is shutting down")

// errBodyTooLarge is reported when a request body exceeds limits.max_request_bytes after
// decompression.
var errBodyTooLarge = errors.New("request body too large")
