package agent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/outboxhq/outbox/internal/freelist"

	"github.com/klauspost/compress/gzip"
)

// bodyReader reads request bodies under the request limit. The limit applies twice: to the
// raw bytes on the wire (http.MaxBytesReader, so a slow or endless upload is cut) and to the
// decompressed bytes (so a gzip bomb is read at most limit+1 bytes far and then rejected).
//
// Bodies are read into kept buffers: a batch body is a few hundred KiB, and a fresh buffer
// per request would cost its allocation, its zeroing and the garbage collections it brings
// on. The buffers are kept in a bounded free list rather than a sync.Pool, which drops them at
// every collection. The events ParseBatch returns are the body's bytes, so a buffer goes back
// only once nothing refers to it (see requestBody.release).
type bodyReader struct {
	limit int64
	gz    sync.Pool               // *gzip.Reader, reused across requests
	bufs  *freelist.List[*[]byte] // request body buffers, at most keptBodies
}

const (
	// keptBodies is how many body buffers are kept: one per request in flight, for as many
	// concurrent clients as a busy agent serves.
	keptBodies = 16
	// maxPooledBody bounds the buffers kept, so that a few huge requests do not pin their
	// memory for the life of the process (16 × 1 MiB at most; Segment's limit is 500 KB).
	maxPooledBody = 1 << 20
)

// newBodyReader returns a bodyReader for requests of at most limit bytes.
func newBodyReader(limit int64) *bodyReader {
	return &bodyReader{limit: limit, bufs: freelist.New[*[]byte](keptBodies)}
}

// requestBody is a request's decompressed body in a pooled buffer.
type requestBody struct {
	br  *bodyReader
	buf *[]byte
}

// Bytes returns the body.
func (rb requestBody) Bytes() []byte {
	if rb.buf == nil {
		return nil
	}
	return *rb.buf
}

// release returns the buffer to the pool. The caller must hold no reference to the body's
// bytes any more, nor have handed them to anyone who may still read them.
func (rb requestBody) release() {
	if rb.buf == nil || cap(*rb.buf) > maxPooledBody {
		return
	}
	rb.br.bufs.Put(rb.buf)
}

// errBadEncoding is reported for a Content-Encoding other than gzip or identity.
var errBadEncoding = errors.New("unsupported Content-Encoding (use gzip or none)")

// read returns the decompressed body. Errors: errBodyTooLarge (413), errBadEncoding or a
// corrupt gzip stream (400), or a transport error. A body whose declared Content-Length is
// over the limit is refused before any of it is read: the raw bytes alone would pass the
// limit (for a plain body they are the body), so waiting for them only holds the connection.
func (br *bodyReader) read(w http.ResponseWriter, r *http.Request) (requestBody, error) {
	if r.ContentLength > br.limit {
		return requestBody{}, &bodyTooLargeError{size: r.ContentLength, exact: true}
	}
	raw := http.MaxBytesReader(w, r.Body, br.limit)
	defer raw.Close()

	var src io.Reader = raw
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := br.gzipReader(raw)
		if err != nil {
			return requestBody{}, classifyReadErr(err)
		}
		defer br.gz.Put(zr)
		src = zr
	default:
		return requestBody{}, fmt.Errorf("%w: %q", errBadEncoding, enc)
	}

	rb := requestBody{br: br, buf: br.getBuf(initialCap(r.ContentLength, br.limit))}
	n, err := readAll(rb.buf, io.LimitReader(src, br.limit+1))
	if err != nil {
		rb.release()
		return requestBody{}, classifyReadErr(err)
	}
	if n > br.limit {
		rb.release()
		return requestBody{}, &bodyTooLargeError{size: n}
	}
	return rb, nil
}

// getBuf returns an empty pooled buffer of at least capacity n.
func (br *bodyReader) getBuf(n int) *[]byte {
	if bp, ok := br.bufs.Get(); ok {
		if cap(*bp) >= n {
			*bp = (*bp)[:0]
			return bp
		}
		// Too small for this body: dropped, so that the kept buffers grow to the sizes sent.
	}
	b := make([]byte, 0, n)
	return &b
}

// readAll reads src to its end into *bp, growing it when full, and returns how many bytes it
// read.
func readAll(bp *[]byte, src io.Reader) (int64, error) {
	b := (*bp)[:0]
	defer func() { *bp = b }()
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grows by the runtime's policy
		}
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return int64(len(b)), nil
		case err != nil:
			return int64(len(b)), err
		}
	}
}

// gzipReader returns a pooled gzip reader reset onto src.
func (br *bodyReader) gzipReader(src io.Reader) (*gzip.Reader, error) {
	if zr, ok := br.gz.Get().(*gzip.Reader); ok {
		if err := zr.Reset(src); err != nil {
			br.gz.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(src)
}

// classifyReadErr maps a read failure to errBodyTooLarge when the raw limit was hit, to
// errBodyTimeout when the read deadline passed, or to a bad-input error otherwise. A
// connection's error names the sockets' addresses; the client is told what happened without
// them.
func classifyReadErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &bodyTooLargeError{size: mbe.Limit + 1}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errBodyTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return errors.New("reading request body: the connection failed before the body's end")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("reading request body: it ended before its declared length or its gzip stream's end")
	}
	return fmt.Errorf("reading request body: %w", err)
}

// initialCap sizes the read buffer from Content-Length when it is known and sane: one byte
// more than the body, so that the read which finds its end needs no room.
func initialCap(contentLength, limit int64) int {
	const minCap = 4 << 10
	if contentLength <= 0 {
		return minCap
	}
	if contentLength > limit {
		return int(limit) + 1
	}
	return int(contentLength) + 512
}
