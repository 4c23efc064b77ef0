package main

import (
	"bytes"
	"fmt"

	"github.com/outboxhq/outbox/pkg/event/eventtest"
)

// idDigits is the width of the counter in the ingest load's messageIds: "msg-" and the
// event's index, zero-padded, so that a new index overwrites the old one in place.
const idDigits = 12

// batchBody is a POST /v1/batch body built once before a load starts, whose events'
// messageIds are fixed-width fields that patch rewrites for each request. Building a body
// costs a few µs per event (realTrack), close to what the
// agent spends ingesting it, on the same two cores; patching 100 counters costs well under
// a microsecond per request. The events of a body are otherwise the same from one request
// to the next, which does not matter to ingest: its bodies are plain JSON (no gzip).
type batchBody struct {
	buf  []byte
	ids  []int // offset of each event's idDigits-digit counter in buf
	ends []int // offset just past each event in buf
	tail []byte
}

// newBatchBody builds a body of n events made by gen(first), …, gen(first+n-1), whose
// messageIds have the fixed-width form.
func newBatchBody(gen payloadFunc, first, n int) (*batchBody, error) {
	head, tail, err := batchFrame()
	if err != nil {
		return nil, err
	}
	b := &batchBody{buf: append([]byte(nil), head...), tail: tail}
	for j := range n {
		if j > 0 {
			b.buf = append(b.buf, ',')
		}
		ev, at, err := fixedID(gen(first + j))
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", first+j, err)
		}
		b.ids = append(b.ids, len(b.buf)+at)
		b.buf = append(b.buf, ev...)
		b.ends = append(b.ends, len(b.buf))
	}
	b.buf = append(b.buf, tail...)
	return b, nil
}

// batchFrame returns what eventtest.Batch writes before the first event and after the last.
func batchFrame() (head, tail []byte, err error) {
	const mark = "{\"x\":\"\x00mark\x00\"}"
	one := eventtest.Batch(1, 0, func(int) []byte { return []byte(mark) })
	head, tail, ok := bytes.Cut(one, []byte(mark))
	if !ok {
		return nil, nil, fmt.Errorf("eventtest.Batch: event not found in its body")
	}
	return head, tail, nil
}

// idPrefix opens an event's messageId value.
const idPrefix = `"messageId":"`

// fixedID checks that ev's messageId is "msg-" and idDigits digits (realTrack makes them so)
// and returns ev and the offset of the counter in it.
func fixedID(ev []byte) ([]byte, int, error) {
	start := bytes.Index(ev, []byte(idPrefix))
	if start < 0 {
		return nil, 0, fmt.Errorf("no messageId")
	}
	start += len(idPrefix)
	end := bytes.IndexByte(ev[start:], '"')
	if end != len("msg-")+idDigits || !bytes.HasPrefix(ev[start:], []byte("msg-")) {
		return nil, 0, fmt.Errorf("messageId is not msg- and %d digits", idDigits)
	}
	return ev, start + len("msg-"), nil
}

// patch writes the messageIds of events first, first+1, … into the body and returns the
// body of its first n events (n < the body's events copies the events into a new body).
func (b *batchBody) patch(first, n int) []byte {
	for j, at := range b.ids[:n] {
		putCounter(b.buf[at:at+idDigits], first+j)
	}
	if n == len(b.ids) {
		return b.buf
	}
	return append(append([]byte(nil), b.buf[:b.ends[n-1]]...), b.tail...)
}

// putCounter writes v into dst in decimal, zero-padded to len(dst) (the high digits are
// dropped if v has more).
func putCounter(dst []byte, v int) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
}
