package event

import (
	"time"

	"github.com/outboxhq/outbox/internal/version"
)

// DefaultMaxEventBytes is the default limit on one normalised event (32 KB,
// Segment's limit), used when Limits.MaxEventBytes is 0.
const DefaultMaxEventBytes = 32768

// DefaultMaxRequestBytes is the default limit on one ingest request body after
// decompression (Segment's 500 KB). pkg/event does not enforce it: the reader
// of the body does, with a bound, before calling ParseBatch.
const DefaultMaxRequestBytes = 512000

// Limits bounds what intake accepts.
type Limits struct {
	// MaxEventBytes is the largest event accepted, measured after
	// normalisation (the bytes that are stored); 0 means DefaultMaxEventBytes.
	MaxEventBytes int
}

// Options configure Normalize and ParseBatch. The zero value is ready to use.
type Options struct {
	// Limits bounds event sizes.
	Limits Limits
	// Library is the JSON object set as context.library on events that have
	// none; nil means {"name":"outbox","version":"<version.Version>"}. It must
	// be a JSON object.
	Library []byte
	// Now gives the intake time, used for a missing timestamp and for the
	// time part of generated messageIds; nil means time.Now.
	Now func() time.Time
	// Scrub, when not nil, removes, masks or hashes fields of every event as
	// its rules say (scrub.go); the returned bytes hold only the scrubbed values.
	Scrub *Scrub
	// Suppress, when not nil, holds the ids of users whose events are dropped:
	// an event whose userId or anonymousId it holds is checked like any other
	// (a bad one still fails its request) and then left out: AppendNormalized
	// and Normalize return ErrSuppressed for it, ParseBatch leaves it out of
	// its result and ParseBatchSuppressed counts it.
	Suppress *IDSet
}

// maxEventBytes returns the effective event size limit.
func (o *Options) maxEventBytes() int {
	if o.Limits.MaxEventBytes > 0 {
		return o.Limits.MaxEventBytes
	}
	return DefaultMaxEventBytes
}

// appendDefaultLibrary appends the default context.library object.
func appendDefaultLibrary(buf []byte) []byte {
	buf = append(buf, `{"name":"outbox","version":`...)
	buf = appendString(buf, version.Version)
	return append(buf, '}')
}

// library returns Options.Library without surrounding whitespace, nil when it
// is nil. A Library that is not a JSON object is an error (a mistake of the
// caller, not bad input).
func (o *Options) library() ([]byte, error) {
	if o.Library == nil {
		return nil, nil
	}
	i := skipSpace(o.Library, 0)
	if i >= len(o.Library) || o.Library[i] != '{' {
		return nil, ErrBadLibrary
	}
	end, err := scanObject(o.Library, i, 1)
	if err != nil || skipSpace(o.Library, end) != len(o.Library) {
		return nil, ErrBadLibrary
	}
	return o.Library[i:end], nil
}
