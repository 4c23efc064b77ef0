package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Dead-letter payload (inside a record, so CRC-protected):
//
//	[u32 info length][info bytes (owned by pkg/queue)]
//	[u32 event count][u64 event bytes]
//	count × ([u32 length][event bytes])
type deadHeader struct {
	info   []byte
	events int
	bytes  int64
	body   []byte // the events part
}

func encodeDead(info []byte, events [][]byte) []byte {
	n := 4 + len(info) + 12
	var total int64
	for _, e := range events {
		n += 4 + len(e)
		total += int64(len(e))
	}
	buf := make([]byte, 0, n)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(info)))
	buf = append(buf, info...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(events)))
	buf = binary.BigEndian.AppendUint64(buf, uint64(total))
	for _, e := range events {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(e)))
		buf = append(buf, e...)
	}
	return buf
}

var errDeadFormat = errors.New("malformed dead-letter payload")

func decodeDeadHeader(p []byte) (deadHeader, error) {
	if len(p) < 4 {
		return deadHeader{}, errDeadFormat
	}
	il := int(binary.BigEndian.Uint32(p))
	if len(p) < 4+il+12 {
		return deadHeader{}, errDeadFormat
	}
	h := deadHeader{info: p[4 : 4+il]}
	rest := p[4+il:]
	h.events = int(binary.BigEndian.Uint32(rest))
	h.bytes = int64(binary.BigEndian.Uint64(rest[4:]))
	h.body = rest[12:]
	return h, nil
}

// deadEvents splits the events part of a dead payload, copying each event.
func deadEvents(h deadHeader) ([][]byte, error) {
	out := make([][]byte, 0, h.events)
	b := h.body
	for i := 0; i < h.events; i++ {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: event %d truncated", errDeadFormat, i)
		}
		l := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+l {
			return nil, fmt.Errorf("%w: event %d truncated", errDeadFormat, i)
		}
		out = append(out, append([]byte(nil), b[4:4+l]...))
		b = b[4+l:]
	}
	return out, nil
}
