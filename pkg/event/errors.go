package event

import (
	"errors"
	"strconv"
)

// ErrInvalid is matched (errors.Is) by every *Error: the input was refused.
var ErrInvalid = errors.New("invalid event input")

// ErrTooLarge is matched (errors.Is) by an *Error for an event that is larger
// than Limits.MaxEventBytes after normalisation.
var ErrTooLarge = errors.New("event too large")

// ErrSuppressed is returned by Normalize and AppendNormalized for a valid event whose user
// Options.Suppress holds: it is to be dropped, and the caller counts it.
var ErrSuppressed = errors.New("event of a suppressed user")

// ErrBadLibrary is returned when Options.Library is not a JSON object (a
// mistake of the caller's configuration, not bad input).
var ErrBadLibrary = errors.New("event: Options.Library must be a JSON object")

// Error is bad input: which event (Index), which field, and why. Reason is
// phrased so that a user knows what to change. An *Error matches ErrInvalid
// with errors.Is, and also ErrTooLarge when the event is over the size limit.
type Error struct {
	// Index is the 0-based position of the bad event in the request's batch
	// (0 for Normalize), or -1 when the error is about the request as a whole.
	Index int
	// Field is the top-level field at fault ("userId", "timestamp", …), empty
	// when the event or body as a whole is at fault.
	Field string
	// Reason says what is wrong and what to do.
	Reason string

	tooLarge bool
}

// Error returns "event <index>: <field>: <reason>" ("request: …" for Index -1).
func (e *Error) Error() string {
	var b []byte
	if e.Index >= 0 {
		b = append(b, "event "...)
		b = strconv.AppendInt(b, int64(e.Index), 10)
	} else {
		b = append(b, "request"...)
	}
	b = append(b, ": "...)
	if e.Field != "" {
		b = append(b, e.Field...)
		b = append(b, ": "...)
	}
	b = append(b, e.Reason...)
	return string(b)
}

// Is reports whether target is ErrInvalid, or ErrTooLarge for an event over
// the size limit.
func (e *Error) Is(target error) bool {
	return target == ErrInvalid || (e.tooLarge && target == ErrTooLarge)
}

// badField is the *Error for an event-level problem; the index is filled in by
// the caller that knows it.
func badField(field, reason string) *Error {
	return &Error{Field: field, Reason: reason}
}

// badSyntax turns a scanner error into an *Error; what names the input
// ("event", "request body") the offset is counted in.
func badSyntax(se *syntaxError, what string) *Error {
	return &Error{Reason: "invalid JSON at byte " + strconv.Itoa(se.off) + " of the " + what + ": " +
		se.msg + "; send well-formed JSON"}
}
