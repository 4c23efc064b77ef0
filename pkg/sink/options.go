package sink

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// DefaultMaxBodyBytes bounds a decoded request body when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 16 << 20

// RespondFunc decides the response to a decoded batch request. It is called with the request as
// recorded (events included unless Options.DiscardEvents) and the response the Script chose for
// it; it returns the response to play, usually scripted itself or an override. It is not called
// when the script chose ResetBeforeBody (the body is never read) nor for bodies that failed to
// decode. It runs on the request's goroutine and must be safe for concurrent use.
type RespondFunc func(req Request, scripted Response) Response

// SleepFunc waits d or until ctx ends, returning ctx.Err() in that case. It plays Response.Delay.
type SleepFunc func(ctx context.Context, d time.Duration) error

// Options configure a sink. The zero value is a permissive collector that accepts every batch,
// retains everything it receives and logs nothing.
type Options struct {
	// WriteKey, when set, must be the Basic auth username of every batch request (what Segment
	// SDKs send); other requests get 401 without consuming a script step.
	WriteKey string
	// Script decides the responses; the zero Script answers 200 to everything.
	Script Script
	// Respond, when set, may override the scripted response after the body is decoded.
	Respond RespondFunc
	// DiscardEvents drops event bytes and messageIds after counting them, so a long benchmark
	// does not hold every body in memory: Events() is then empty and Request.Events nil.
	DiscardEvents bool
	// MaxRequests keeps only the most recent N request records (0: all of them). Counters are
	// never truncated.
	MaxRequests int
	// MaxBodyBytes bounds a body after decompression; larger bodies get 413.
	// 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// NoValidate skips the full JSON validity check of each body. The batch structure is still
	// scanned (events split, messageIds found), so only malformed scalars go unnoticed. For
	// benchmarks, where the check would compete with the uploader for CPU.
	NoValidate bool
	// Sleep plays delays; nil uses a real timer. Inject a fake clock's sleep to cut delays.
	Sleep SleepFunc
	// Now renders Response.RetryAfterIn dates and stamps records; nil uses time.Now.
	Now func() time.Time
	// Print, when set, gets every event of each accepted batch as one line: the event's JSON
	// as it arrived, so a developer watching the sink sees what was delivered (`outbox sink
	// --print`). Lines of one batch are written together; a rejected batch prints nothing.
	Print io.Writer
	// Logger gets one info line per batch request (path, status, events, duplicates,
	// retry count); nil discards. The Authorization header is never logged.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Sleep == nil {
		o.Sleep = sleepReal
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func sleepReal(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
