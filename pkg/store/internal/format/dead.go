package format

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Dead-letter payload (inside a record, so CRC-protected):
//
//	[u32 info length][info bytes (store.DeadInfo as JSON)]
//	[u32 event count][u64 event bytes]
//	count × ([u32 length][event bytes])

// DeadHeader is a dead batch's payload split into its parts; Info and Body alias the payload.
type DeadHeader struct {
	Info   []byte
	Events int
	Bytes  int64
	Body   []byte // the events part
}

// EncodeDead is the payload of a dead batch holding events, with its info.
func EncodeDead(info []byte, events [][]byte) []byte {
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

// DecodeDeadHeader splits a dead batch's payload p (the events part is not checked: DeadEvents).
func DecodeDeadHeader(p []byte) (DeadHeader, error) {
	if len(p) < 4 {
		return DeadHeader{}, errDeadFormat
	}
	il := int(binary.BigEndian.Uint32(p))
	if len(p) < 4+il+12 {
		return DeadHeader{}, errDeadFormat
	}
	h := DeadHeader{Info: p[4 : 4+il]}
	rest := p[4+il:]
	h.Events = int(binary.BigEndian.Uint32(rest))
	h.Bytes = int64(binary.BigEndian.Uint64(rest[4:]))
	h.Body = rest[12:]
	return h, nil
}

// DeadEvents splits the events part of a dead payload, copying each event.
func DeadEvents(h DeadHeader) ([][]byte, error) {
	out := make([][]byte, 0, h.Events)
	b := h.Body
	for i := 0; i < h.Events; i++ {
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
