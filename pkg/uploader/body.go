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
	gzips freeList[*stager]
}

// Kept for reuse: the buffers of two bodies in use and one being built, and
// a gzip writer for each of the worker's two goroutines.
const (
	keptBufs  = 4
	keptGzips = 2
)

func newEncoder(gz bool) *encoder {
	return &encoder{gzip: gz, bufs: freeList[*bytes.Buffer]{max: keptBufs}, gzips: freeList[*stager]{max: keptGzips}}
}

// body is one encoded request body. Release returns its buffer to the pool;
// the bytes must not be used after that.
type body struct {
	enc    *encoder
	wire   *bytes.Buffer // what is sent: the JSON, or its gzip
	Plain  int           // uncompressed size
	sentAt time.Time     // the body's sentAt
}

// Bytes is what goes on the wire.
func (b *body) Bytes() []byte { return b.wire.Bytes() }

// Release returns the buffer to the encoder's pool.
func (b *body) Release() {
	b.enc.putBuf(b.wire)
	b.wire = nil
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
	plain := EncodedSize(events)
	out := e.getBuf()
	b := &body{enc: e, wire: out, Plain: plain, sentAt: sentAt}
	if !e.gzip {
		out.Grow(plain)
		// AppendBody writes into the buffer's spare capacity; Write then finds the bytes
		// already in place (copy skips a copy onto itself), so the events are copied once.
		out.Write(AppendBody(out.AvailableBuffer(), events, sentAt))
		return b, nil
	}
	if err := e.compress(out, events, sentAt, plain); err != nil {
		b.Release()
		return nil, err
	}
	return b, nil
}

// compress writes the gzip of the body of events to out with a kept writer.
// The body is staged a few KiB at a time rather than built whole first: gzip
// gets a few large writes, and no second copy of the batch passes through the
// caches on its way.
func (e *encoder) compress(out *bytes.Buffer, events [][]byte, sentAt time.Time, plain int) error {
	out.Grow(plain/4 + 64)
	s, ok := e.gzips.get()
	if ok {
		s.zw.Reset(out)
	} else {
		zw, _ := gzip.NewWriterLevel(out, gzipLevel) // the level is a valid constant
		s = &stager{zw: zw, buf: make([]byte, 0, stageBytes)}
	}
	defer e.gzips.put(s)
	s.err = nil
	s.buf = append(s.buf[:0], bodyPrefix...)
	for i, ev := range events {
		if i > 0 {
			s.add(comma[:])
		}
		s.add(ev)
	}
	var tail [len(bodyMid) + len(sentAtLayout) + len(bodySuffix)]byte
	t := append(tail[:0], bodyMid...)
	t = sentAt.UTC().AppendFormat(t, sentAtLayout)
	s.add(append(t, bodySuffix...))
	s.flush()
	if s.err == nil {
		s.err = s.zw.Close()
	}
	if s.err != nil {
		return fmt.Errorf("gzip body: %w", s.err)
	}
	return nil
}

// comma separates the events of a body.
var comma = [1]byte{','}

// stageBytes is the size of a stager's buffer: big enough that gzip sees few
// writes, small enough to stay in the CPU's caches.
const stageBytes = 32 << 10

// stager feeds a gzip writer through a staging buffer.
type stager struct {
	zw  *gzip.Writer
	buf []byte
	err error // the first write error
}

// add stages p, handing what is staged to gzip first when p does not fit; a
// p larger than the buffer goes to gzip directly.
func (s *stager) add(p []byte) {
	if len(s.buf)+len(p) > cap(s.buf) {
		s.flush()
		if len(p) > cap(s.buf) {
			s.write(p)
			return
		}
	}
	s.buf = append(s.buf, p...)
}

// flush hands what is staged to gzip.
func (s *stager) flush() {
	if len(s.buf) > 0 {
		s.write(s.buf)
		s.buf = s.buf[:0]
	}
}

func (s *stager) write(p []byte) {
	if s.err == nil {
		_, s.err = s.zw.Write(p)
	}
}
