package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// bodyReader reads request bodies under the request limit. The limit applies twice: to the
// raw bytes on the wire (http.MaxBytesReader, so a slow or endless upload is cut) and to the
// decompressed bytes (so a gzip bomb is read at most limit+1 bytes far and then rejected).
type bodyReader struct {
	limit int64
	gz    sync.Pool // *gzip.Reader, reused across requests
}

// errBadEncoding is reported for a Content-Encoding other than gzip or identity.
var errBadEncoding = errors.New("unsupported Content-Encoding (use gzip or none)")

// read returns the decompressed body. Errors: errBodyTooLarge (413), errBadEncoding or a
// corrupt gzip stream (400), or a transport error. A body whose declared Content-Length is
// over the limit is refused before any of it is read: the raw bytes alone would pass the
// limit (for a plain body they are the body), so waiting for them only holds the connection.
func (br *bodyReader) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > br.limit {
		return nil, errBodyTooLarge
	}
	raw := http.MaxBytesReader(w, r.Body, br.limit)
	defer raw.Close()

	var src io.Reader = raw
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := br.gzipReader(raw)
		if err != nil {
			return nil, classifyReadErr(err)
		}
		defer br.gz.Put(zr)
		src = zr
	default:
		return nil, fmt.Errorf("%w: %q", errBadEncoding, enc)
	}

	buf := bytes.NewBuffer(make([]byte, 0, initialCap(r.ContentLength, br.limit)))
	n, err := buf.ReadFrom(io.LimitReader(src, br.limit+1))
	if err != nil {
		return nil, classifyReadErr(err)
	}
	if n > br.limit {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
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

// classifyReadErr maps a read failure to errBodyTooLarge when the raw limit was hit, or to a
// bad-input error otherwise.
func classifyReadErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errBodyTooLarge
	}
	return fmt.Errorf("reading request body: %w", err)
}

// initialCap sizes the read buffer from Content-Length when it is known and sane.
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
