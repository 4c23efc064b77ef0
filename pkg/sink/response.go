package sink

import (
	"net/http"
	"time"
)

// Reset says whether and when a response resets the connection instead of answering.
type Reset int

const (
	// NoReset answers normally.
	NoReset Reset = iota
	// ResetBeforeBody resets the connection (RST, SO_LINGER 0) before the request body is read.
	ResetBeforeBody
	// ResetAfterBody reads and records the whole body, then resets the connection without
	// answering: the client cannot know whether the batch arrived (a "maybe sent" error).
	ResetAfterBody
)

// String names the reset mode as the fault syntax spells it.
func (r Reset) String() string {
	switch r {
	case ResetBeforeBody:
		return "reset-before-body"
	case ResetAfterBody:
		return "reset-after-body"
	default:
		return "none"
	}
}

// Response is one answer the sink plays. The zero Response is a plain 200 {"success":true}.
type Response struct {
	// Status is the HTTP status code; 0 means 200. A 2xx status accepts the batch.
	Status int
	// RetryAfter is the raw Retry-After header value ("1", "0", "-3", "soon", or an HTTP-date);
	// empty sends no header unless RetryAfterIn is set.
	RetryAfter string
	// RetryAfterIn, when non-zero and RetryAfter is empty, sends Retry-After as an HTTP-date this
	// far from the moment the response is played (negative gives a date in the past).
	RetryAfterIn time.Duration
	// Location sets the Location header, for 3xx answers.
	Location string
	// Body is the response body; empty means {"success":true} for 2xx and
	// {"error":"<status text>"} otherwise.
	Body string
	// Header holds extra response headers.
	Header http.Header
	// Delay waits this long before answering (after the body was read). The wait goes through
	// Options.Sleep and ends early when the request's context ends or the sink closes; then no
	// answer is written and the batch is not accepted.
	Delay time.Duration
	// Hang never answers: the handler waits until the request's context ends or the sink closes.
	Hang bool
	// Reset resets the connection instead of answering; Status and the rest are ignored.
	Reset Reset
}

// StatusCode is Status with the zero value resolved to 200.
func (r Response) StatusCode() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// accepts reports whether playing r accepts the batch (a 2xx answer that is written).
func (r Response) accepts() bool {
	s := r.StatusCode()
	return s >= 200 && s < 300 && r.Reset == NoReset && !r.Hang
}

// Outcome is what finally happened to a recorded request.
type Outcome string

const (
	// OutcomeAccepted: a 2xx was answered; the batch's events were counted.
	OutcomeAccepted Outcome = "accepted"
	// OutcomeRejected: a non-2xx status was answered (scripted, auth, bad body, wrong route).
	OutcomeRejected Outcome = "rejected"
	// OutcomeReset: the connection was reset (before or after the body was read).
	OutcomeReset Outcome = "reset"
	// OutcomeCanceled: a delay or hang ended because the client went away or the sink closed.
	OutcomeCanceled Outcome = "canceled"
	// OutcomePending: the response is still being played (a delay or a hang in progress).
	OutcomePending Outcome = "pending"
)
