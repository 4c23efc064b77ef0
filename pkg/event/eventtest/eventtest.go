// Package eventtest holds event fixtures shared by the tests and benchmarks of
// outbox: realistic Segment events of a known size and batch bodies built
// from them.
package eventtest

import (
	"strconv"
	"strings"
)

// TrackSize is the size in bytes of every event Track returns: the size of a
// typical analytics-go/analytics-node track call, used across the
// benchmarks.
const TrackSize = 535

// Track returns a track event of exactly TrackSize bytes, as an SDK sends it
// (messageId, timestamp and context.library set), distinct for each i ≥ 0.
// Its messageId is "msg-<i>" padded, its userId "user-<i%1000>".
func Track(i int) []byte {
	return pad(trackPrefix(i), TrackSize)
}

// TrackBare returns a track event with only type, event, userId and
// properties, of exactly TrackSize bytes: the normaliser must add
// messageId, timestamp and context.library to it.
func TrackBare(i int) []byte {
	var b []byte
	b = append(b, `{"type":"track","event":"Order Completed","userId":"user-`...)
	b = strconv.AppendInt(b, int64(i%1000), 10)
	b = append(b, `","properties":{"orderId":"`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","total":27.5,"currency":"USD","products":[{"sku":"45790-32","name":"Monopoly","price":19,"quantity":1}]`...)
	return pad(b, TrackSize)
}

// trackPrefix writes the event up to the open "note" property that pad
// fills.
func trackPrefix(i int) []byte {
	var b []byte
	b = append(b, `{"type":"track","event":"Order Completed","userId":"user-`...)
	b = strconv.AppendInt(b, int64(i%1000), 10)
	b = append(b, `","anonymousId":"a1b2c3d4-e5f6-4789-abcd-ef0123456789","messageId":"msg-`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","timestamp":"2024-05-01T12:00:00.000Z","context":{"library":{"name":"analytics-go","version":"3.3.0"},`+
		`"ip":"203.0.113.7","locale":"en-US"},"properties":{"orderId":"`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `","total":27.5,"revenue":25,"currency":"USD","products":[{"sku":"45790-32","name":"Monopoly",`+
		`"price":19,"quantity":1},{"sku":"46493-32","name":"Uno","price":3,"quantity":2}]`...)
	return b
}

// pad closes the properties and event with a "note" string property sized so
// that the event is exactly size bytes (or as short as possible when the
// prefix alone is larger).
func pad(prefix []byte, size int) []byte {
	const open, closing = `,"note":"`, `"}}`
	n := size - len(prefix) - len(open) - len(closing)
	b := append(prefix, open...)
	if n > 0 {
		b = append(b, strings.Repeat("x", n)...)
	}
	return append(b, closing...)
}

// Batch returns a Segment batch body of n events made by gen(first),
// gen(first+1), …, with the fields SDKs add at the top level.
func Batch(n, first int, gen func(int) []byte) []byte {
	b := []byte(`{"batch":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, gen(first+i)...)
	}
	return append(b, `],"sentAt":"2024-05-01T12:00:01.000Z","writeKey":"wk"}`...)
}
