package uploader

import (
	"errors"
	"fmt"
	"time"
)

// WaitingError is returned by Flush when the worker is waiting on a retry budget, so the queue
// will not empty before Until. Path is "rate_limit" or "backoff".
type WaitingError struct {
	Path  string    // "rate_limit" (a Retry-After wait) or "backoff" (a counted wait)
	Until time.Time // when the next attempt is due (on the client's clock)
	Err   error     // the failure that caused the wait (a status or a network error), if known
}

// Error says what the worker waits for and until when.
func (e *WaitingError) Error() string {
	s := fmt.Sprintf("uploader: worker is waiting on the %s budget until %s", e.Path, e.Until.UTC().Format(time.RFC3339))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the failure that caused the wait.
func (e *WaitingError) Unwrap() error { return e.Err }

// StatusError describes an attempt the collector answered with a non-2xx status. It is the
// error carried by WaitingError and passed to dead-letter reasons.
type StatusError struct {
	Status int
	Body   []byte // at most 1 KiB of the response body
}

// Error returns "collector answered 503: <snippet>".
func (e *StatusError) Error() string {
	if len(e.Body) == 0 {
		return fmt.Sprintf("collector answered %d", e.Status)
	}
	return fmt.Sprintf("collector answered %d: %s", e.Status, trimSnippet(e.Body, 200))
}

// trimSnippet returns at most n bytes of b as a single-line string.
func trimSnippet(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == '\n' || c == '\r' || c == '\t' {
			c = ' '
		}
		out = append(out, c)
	}
	return string(out)
}

// AuthPausedError is returned by Flush while delivery is paused because the destination
// refuses our credentials (upload.on_auth_failure: pause): the queue will not empty until the
// credentials are fixed. errors.Is(err, ErrAuthRefused) matches it.
type AuthPausedError struct{ AuthPauseStats }

// Error says that delivery is paused, why, and what to fix.
func (e *AuthPausedError) Error() string {
	return fmt.Sprintf("uploader: delivery paused since %s: %s", e.Since.UTC().Format(time.RFC3339), e.Message)
}

// Is matches ErrAuthRefused.
func (e *AuthPausedError) Is(target error) bool { return target == ErrAuthRefused }

// ErrAuthRefused matches an *AuthPausedError.
var ErrAuthRefused = errors.New("uploader: the destination refuses our credentials")

// errNoDestination is Open's error when neither WithDestination nor WithDestinationFunc gave a
// destination.
var errNoDestination = errors.New("uploader: no destination: open the client with segment.Open (pkg/segment: the HTTP collector of the upload.* keys), or pass WithDestination or WithDestinationFunc")
