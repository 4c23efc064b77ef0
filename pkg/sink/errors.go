package sink

import "errors"

// ErrBadFaultSpec is wrapped by ParseFaults when a fault spec cannot be parsed.
var ErrBadFaultSpec = errors.New("sink: bad fault spec")

// ErrBadBody is wrapped by the body decoder when a request body is not a Segment batch.
var ErrBadBody = errors.New("sink: bad batch body")

// ErrClosed is returned by the Wait methods once the sink is closed.
var ErrClosed = errors.New("sink: closed")
