package httpdest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/outboxhq/outbox/internal/freelist"
	"github.com/outboxhq/outbox/pkg/event"
)

// Wire format pieces of a Segment batch body (pkg/event's envelope). Events are spliced between
// bodyPrefix and bodyMid exactly as stored; they are never re-encoded.
const (
	bodyPrefix = event.BatchPrefix
	bodyMid    = event.BatchMid
	bodySuffix = event.BatchSuffix
	// sentAtLayout is RFC 3339 with milliseconds, always in UTC ("Z").
	sentAtLayout = "2006-01-02T15:04:05.000Z07:00"
	// gzipLevel trades ratio for speed: analytics JSON compresses well even
	// at the fastest level, and the drain is bound by compression.
	gzipLevel = gzip.BestSpeed
)

// EncodedSize is the size of the uncompressed body that carries events:
// the envelope, the events and the commas between them. batch.max_bytes is
// measured with it.
func EncodedSize(events [][]byte) int {
	n := event.BatchEnvelopeBytes
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
	a := appender(dst)
	writeBody(&a, events, sentAt)
	return a
}

// bodyWriter is where writeBody puts the pieces of a body. Its writes are not
// checked one by one: it must keep its first error for the caller to read
// (bufio.Writer does; appender never fails).
type bodyWriter interface {
	io.Writer
	io.StringWriter
}

// writeBody writes the body of events to w, piece by piece: the one place the
// body's layout is spelt out, for the plain body (AppendBody) and the gzipped
// one (encoder.compress) alike.
func writeBody(w bodyWriter, events [][]byte, sentAt time.Time) {
	_, _ = w.WriteString(bodyPrefix)
	for i, e := range events {
		if i > 0 {
			_, _ = w.WriteString(",")
		}
		_, _ = w.Write(e)
	}
	var tail [len(bodyMid) + len(sentAtLayout) + len(bodySuffix)]byte
	t := append(tail[:0], bodyMid...)
	t = sentAt.UTC().AppendFormat(t, sentAtLayout)
	_, _ = w.Write(append(t, bodySuffix...))
}

// appender is a bodyWriter that appends to a slice.
type appender []byte

func (a *appender) Write(p []byte) (int, error) {
	*a = append(*a, p...)
	return len(p), nil
}

func (a *appender) WriteString(s string) (int, error) {
	*a = append(*a, s...)
	return len(s), nil
}

// encoder builds request bodies with kept buffers and gzip writers. It is
// safe for concurrent use; the worker uses it from two goroutines at most
// (a body built ahead beside one built for an attempt), the benchmarks from
// several.
type encoder struct {
	gzip  bool
	bufs  *freelist.List[*bytes.Buffer]
	gzips *freelist.List[*gzipStage]
}

// Kept for reuse: the buffers of two bodies in use and one being built, and
// a gzip writer for each of the worker's two goroutines.
const (
	keptBufs  = 4
	keptGzips = 2
)

func newEncoder(gz bool) *encoder {
	return &encoder{gzip: gz, bufs: freelist.New[*bytes.Buffer](keptBufs), gzips: freelist.New[*gzipStage](keptGzips)}
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
	b, ok := e.bufs.Get()
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
	e.bufs.Put(b)
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
// The body goes to gzip through a staging buffer rather than being built
// whole first: gzip gets a few large writes, and no second copy of the batch
// passes through the caches on its way.
func (e *encoder) compress(out *bytes.Buffer, events [][]byte, sentAt time.Time, plain int) error {
	out.Grow(plain/4 + 64)
	g, ok := e.gzips.Get()
	if ok {
		g.zw.Reset(out)
		g.bw.Reset(g.zw)
	} else {
		zw, _ := gzip.NewWriterLevel(out, gzipLevel) // the level is a valid constant
		g = &gzipStage{zw: zw, bw: bufio.NewWriterSize(zw, stageBytes)}
	}
	defer e.gzips.Put(g)
	writeBody(g.bw, events, sentAt)
	err := g.bw.Flush()
	if err == nil {
		err = g.zw.Close()
	}
	if err != nil {
		return fmt.Errorf("gzip body: %w", err)
	}
	return nil
}

// stageBytes is the size of the staging buffer in front of gzip: big enough
// that gzip sees few writes, small enough to stay in the CPU's caches.
const stageBytes = 32 << 10

// gzipStage is a kept gzip writer with its staging buffer.
type gzipStage struct {
	zw *gzip.Writer
	bw *bufio.Writer // stages into zw; a write larger than its buffer goes to zw directly
}
