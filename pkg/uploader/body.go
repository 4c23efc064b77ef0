package uploader

import (
	"bytes"
	"fmt"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Wire format pieces of a Segment batch body. Events are spliced between
// bodyPrefix and bodyMid exactly as stored; they are never re-encoded.
const (
	bodyPrefix = `{"batch":[`
	bodyMid    = `],"sentAt":"`
	bodySuffix = `"}`
	// sentAtLayout is RFC 3339 with milliseconds, always in UTC ("Z").
	sentAtLayout = "2006-01-02T15:04:05.000Z07:00"
	// envelopeBytes is the size of the body without its events and commas.
	envelopeBytes = len(bodyPrefix) + len(bodyMid) + len("2006-01-02T15:04:05.000Z") + len(bodySuffix)
	// gzipLevel trades ratio for speed: analytics JSON compresses well even
	// at the fastest level, and the drain is bound by compression.
	gzipLevel = gzip.BestSpeed
)

// EncodedSize is the size of the uncompressed body that carries events:
// the envelope, the events and the commas between them. batch.max_bytes is
// measured with it.
func EncodedSize(events [][]byte) int {
	n := envelopeBytes
	for i, e := range events {
		if i > 0 {
			n++
		}
		n += len(e)
	}
	return n
}

// AppendBody appends the Segment batch body {"batch":[e1,e2,...],"sentAt":"…"}
// to dst, splicing the events in as given, and returns the extended slice.
func AppendBody(dst []byte, events [][]byte, sentAt time.Time) []byte {
	dst = append(dst, bodyPrefix...)
	for i, e := range events {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e...)
	}
	dst = append(dst, bodyMid...)
	dst = sentAt.UTC().AppendFormat(dst, sentAtLayout)
	return append(dst, bodySuffix...)
}

// encoder builds request bodies with kept buffers and gzip writers. It is
// safe for concurrent use; the worker uses it from two goroutines at most
// (a body built ahead beside one built for an attempt), the benchmarks from
// several.
type encoder struct {
	gzip  bool
	bufs  freeList[*bytes.Buffer]
	gzips freeList[*gzip.Writer]
}

// Kept for reuse: the buffers of two bodies in use and one being built (raw
// and wire each), and a gzip writer for each of the worker's two goroutines.
const (
	keptBufs  = 6
	keptGzips = 2
)

func newEncoder(gz bool) *encoder {
	return &encoder{gzip: gz, bufs: freeList[*bytes.Buffer]{max: keptBufs}, gzips: freeList[*gzip.Writer]{max: keptGzips}}
}

// body is one encoded request body. Release returns its buffers to the pool;
// the bytes must not be used after that.
type body struct {
	enc    *encoder
	raw    *bytes.Buffer // uncompressed JSON
	wire   *bytes.Buffer // what is sent: raw, or gzip of raw
	Plain  int           // uncompressed size
	sentAt time.Time     // the body's sentAt
}

// Bytes is what goes on the wire.
func (b *body) Bytes() []byte { return b.wire.Bytes() }

// Release returns the buffers to the encoder's pools.
func (b *body) Release() {
	if b.wire != b.raw {
		b.enc.putBuf(b.wire)
	}
	b.enc.putBuf(b.raw)
	b.raw, b.wire = nil, nil
}

func (e *encoder) getBuf() *bytes.Buffer {
	b, ok := e.bufs.get()
	if !ok {
		return new(bytes.Buffer)
	}
	b.Reset()
	return b
}

// putBuf keeps buffers of a sane size only, so one huge batch does not pin
// its memory for the life of the process.
func (e *encoder) putBuf(b *bytes.Buffer) {
	if b == nil || b.Cap() > 8<<20 {
		return
	}
	e.bufs.put(b)
}

// encode builds the body for events sent at sentAt.
func (e *encoder) encode(events [][]byte, sentAt time.Time) (*body, error) {
	raw := e.getBuf()
	raw.Grow(EncodedSize(events))
	// AppendBody writes into the buffer's spare capacity; Write then finds the bytes already
	// in place (copy skips a copy onto itself), so the events are copied once.
	raw.Write(AppendBody(raw.AvailableBuffer(), events, sentAt))
	b := &body{enc: e, raw: raw, wire: raw, Plain: raw.Len(), sentAt: sentAt}
	if !e.gzip {
		return b, nil
	}
	out := e.getBuf()
	if err := e.compress(out, raw.Bytes()); err != nil {
		e.putBuf(out)
		b.Release()
		return nil, err
	}
	b.wire = out
	return b, nil
}

// compress writes the gzip of p to out with a pooled writer.
func (e *encoder) compress(out *bytes.Buffer, p []byte) error {
	out.Grow(len(p)/4 + 64)
	zw, ok := e.gzips.get()
	if ok {
		zw.Reset(out)
	} else {
		zw, _ = gzip.NewWriterLevel(out, gzipLevel) // the level is a valid constant
	}
	defer e.gzips.put(zw)
	if _, err := zw.Write(p); err != nil {
		return fmt.Errorf("gzip body: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("gzip body: %w", err)
	}
	return nil
}
