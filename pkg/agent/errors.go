package agent

import "errors"

// ErrUnauthenticated is returned by Config.Validate and New when a non-loopback listen
// address has no auth configured and ingest.allow_unauthenticated is not set.
var ErrUnauthenticated = errors.New("refusing to listen without auth on a non-loopback address")

// ErrShuttingDown is returned by Serve when Shutdown has already begun.
var ErrShuttingDown = errors.New("agent is shutting down")

// errBodyTooLarge is reported when a request body exceeds limits.max_request_bytes after
// decompression; the error is a *bodyTooLargeError that says by how much.
var errBodyTooLarge = errors.New("request body too large")

// errBodyTimeout is reported when a request body did not arrive within its read deadline.
var errBodyTimeout = errors.New("request body read timed out")

// bodyTooLargeError is errBodyTooLarge with the size seen.
type bodyTooLargeError struct {
	size  int64 // the body's size when exact, else the bytes read before the limit stopped it
	exact bool  // size is the whole body's (its Content-Length)
}

func (e *bodyTooLargeError) Error() string { return errBodyTooLarge.Error() }

// Is makes errors.Is(err, errBodyTooLarge) hold.
func (e *bodyTooLargeError) Is(target error) bool { return target == errBodyTooLarge }
