package uploader

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/outboxhq/outbox/pkg/event"
)

// normalizedCall is one Enqueue or EnqueueAsync call's events, normalised into one buffer the
// client reuses: the store copies every event into its own append block before Append or
// AppendAsync returns, so the bytes are needed only until then. Reusing the buffer, instead of
// allocating each event anew, keeps an app's per-event allocation to what its own values
// cost; fresh memory for every event was a page fault per event in a busy process.
type normalizedCall struct {
	events  [][]byte // the normalised events, slices of out
	out     []byte   // the normalised bytes of every event, one after the other
	ends    []int    // where each event ends in out
	scratch []byte   // event.AppendJSON's output for an event that is a Go value
}

// maxKeptCall bounds the buffers a normalizedCall keeps when it goes back to the pool, so a
// rare huge call does not pin its memory.
const maxKeptCall = 256 << 10

var callPool = sync.Pool{New: func() any { return new(normalizedCall) }}

// release hands the call's buffers back for the next call; call.events must not be used after.
func (call *normalizedCall) release() {
	if cap(call.out) > maxKeptCall || cap(call.scratch) > maxKeptCall {
		return
	}
	clear(call.events)
	call.events, call.out, call.ends, call.scratch = call.events[:0], call.out[:0], call.ends[:0], call.scratch[:0]
	callPool.Put(call)
}

// normalize validates and normalises Enqueue's arguments into a pooled normalizedCall; the
// first bad one is an *event.Error with its index. The client's scrub rules apply, and the
// events of suppressed users are left out and counted as dropped (once every event of the
// call passed its checks). Each event is a map[string]any (or any value
// encoding/json turns into an object), a []byte, a string or a json.RawMessage of one JSON
// object; a Go value is serialised by event.AppendJSON first.
func (c *Client) normalize(events []any) (_ *normalizedCall, err error) {
	call := callPool.Get().(*normalizedCall)
	opt := c.IntakeOptions(c.evOpts)
	suppressed := 0
	defer func() {
		if err != nil {
			call.release()
		}
	}()
	for i, ev := range events {
		var raw []byte
		switch v := ev.(type) {
		case []byte:
			raw = v
		case json.RawMessage:
			raw = v
		case string:
			raw = []byte(v)
		case nil:
			return nil, &event.Error{Index: i, Reason: "event is nil"}
		default:
			b, err := event.AppendJSON(call.scratch[:0], v)
			if err != nil {
				return nil, &event.Error{Index: i, Reason: "encode event: " + err.Error()}
			}
			call.scratch, raw = b, b
		}
		out, err := event.AppendNormalized(call.out, raw, "", opt)
		if errors.Is(err, event.ErrSuppressed) {
			suppressed++
			continue
		}
		if err != nil {
			return nil, withIndex(err, i)
		}
		call.out = out
		call.ends = append(call.ends, len(out))
	}
	// Sliced only now: out may have moved while it grew.
	start := 0
	for _, end := range call.ends {
		call.events = append(call.events, call.out[start:end:end])
		start = end
	}
	c.CountSuppressed(suppressed)
	return call, nil
}
