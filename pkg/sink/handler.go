package sink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// serveBatch records and answers one POST to a batch route.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) {
	if key := s.opts.WriteKey; key != "" {
		if user, _, ok := r.BasicAuth(); !ok || user != key {
			w.Header().Set("WWW-Authenticate", `Basic realm="sink"`)
			s.refuse(w, r, http.StatusUnauthorized, "missing or wrong write key")
			return
		}
	}
	rec := s.newRecord(r)
	scripted := s.nextResponse()
	if scripted.Reset == ResetBeforeBody {
		s.begin(rec)
		s.finish(rec, scripted, OutcomeReset, nil, nil)
		s.log(rec)
		reset(w)
		return
	}

	buf := s.getBuffer()
	defer s.putBuffer(buf)
	status, err := s.readBody(r, rec, buf)
	var d decoded
	if err == nil {
		d, err = s.decode(buf.Bytes())
		status = http.StatusBadRequest
	}
	if err != nil {
		rec.Err = err.Error()
		s.begin(rec)
		resp := Response{Status: status, Body: errorBody(err.Error())}
		s.finish(rec, resp, OutcomeRejected, nil, nil)
		s.log(rec)
		writeResponse(w, resp)
		return
	}
	rec.SentAt = d.sentAt
	rec.EventCount = len(d.events)
	hashes := make([]uint64, len(d.ids))
	for i, id := range d.ids {
		hashes[i] = s.hashID(id)
	}
	var events []json.RawMessage
	if !s.opts.DiscardEvents {
		events = make([]json.RawMessage, len(d.events))
		rec.MessageIDs = make([]string, len(d.ids))
		for i, ev := range d.events {
			events[i] = ev
			rec.MessageIDs[i] = string(d.ids[i])
		}
		rec.Events = events
	}
	s.begin(rec)

	resp := scripted
	if s.opts.Respond != nil {
		resp = s.opts.Respond(*rec, scripted)
	}
	resp = s.render(resp)
	if resp.Hang || resp.Delay > 0 {
		ctx, cancel := s.context(r)
		if resp.Hang {
			<-ctx.Done()
		} else {
			err = s.opts.Sleep(ctx, resp.Delay)
		}
		cancel()
		if resp.Hang || err != nil {
			s.finish(rec, resp, OutcomeCanceled, nil, nil)
			s.log(rec)
			drop(w) // returning normally would send an empty 200
			return
		}
	}
	switch {
	case resp.Reset != NoReset:
		s.finish(rec, resp, OutcomeReset, nil, nil)
		s.log(rec)
		reset(w)
		return
	case resp.accepts():
		s.finish(rec, resp, OutcomeAccepted, hashes, events)
		s.print(d.events)
	default:
		s.finish(rec, resp, OutcomeRejected, nil, nil)
	}
	s.log(rec)
	writeResponse(w, resp)
}

// newRecord starts the record of a request from its request line and headers.
func (s *Server) newRecord(r *http.Request) *Request {
	return &Request{
		Time:       s.opts.Now(),
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		RemoteAddr: r.RemoteAddr,
		Header:     r.Header.Clone(),
		Gzip:       strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip"),
	}
}

// readBody reads the (possibly gzipped) body into buf, bounded by MaxBodyBytes. On error it
// returns the status to answer.
func (s *Server) readBody(r *http.Request, rec *Request, buf *bytes.Buffer) (int, error) {
	wire := &countReader{r: r.Body}
	var src io.Reader = wire
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := s.gzipReader(wire)
		if err != nil {
			return http.StatusBadRequest, fmt.Errorf("%w: gzip: %w", ErrBadBody, err)
		}
		defer s.gzPool.Put(zr)
		src = zr
	default:
		return http.StatusUnsupportedMediaType, fmt.Errorf("%w: unsupported Content-Encoding %q", ErrBadBody, enc)
	}
	if r.ContentLength > 0 && !rec.Gzip {
		buf.Grow(int(min(r.ContentLength, s.opts.MaxBodyBytes)) + 1)
	}
	n, err := buf.ReadFrom(io.LimitReader(src, s.opts.MaxBodyBytes+1))
	rec.WireBytes, rec.BodyBytes = wire.n, n
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("%w: reading body: %w", ErrBadBody, err)
	}
	if n > s.opts.MaxBodyBytes {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("%w: body over %d bytes", ErrBadBody, s.opts.MaxBodyBytes)
	}
	return 0, nil
}

func (s *Server) gzipReader(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := s.gzPool.Get().(*gzip.Reader); ok {
		if err := zr.Reset(r); err != nil {
			s.gzPool.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(r)
}

// decode validates (unless NoValidate) and scans a batch body.
func (s *Server) decode(body []byte) (decoded, error) {
	if !s.opts.NoValidate && !json.Valid(body) {
		return decoded{}, fmt.Errorf("%w: body is not valid JSON", ErrBadBody)
	}
	return scanBatch(body)
}

// getBuffer returns a body buffer: pooled when events are discarded, else a fresh one the
// retained events will point into.
func (s *Server) getBuffer() *bytes.Buffer {
	if s.opts.DiscardEvents {
		b := s.bufPool.Get().(*bytes.Buffer)
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (s *Server) putBuffer(b *bytes.Buffer) {
	if s.opts.DiscardEvents && b.Cap() <= 4*int(min(s.opts.MaxBodyBytes, 1<<20)) {
		s.bufPool.Put(b)
	}
}

// render resolves the response as it will be played.
func (s *Server) render(r Response) Response {
	r.Status = r.StatusCode()
	if r.RetryAfter == "" && r.RetryAfterIn != 0 {
		r.RetryAfter = s.opts.Now().Add(r.RetryAfterIn).UTC().Format(http.TimeFormat)
	}
	return r
}

// reset hijacks the connection and closes it with SO_LINGER 0, so the peer gets a RST.
func reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // not hijackable (HTTP/2): abort the stream instead
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// drop closes the connection without an answer (the client sees EOF).
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func writeResponse(w http.ResponseWriter, r Response) {
	h := w.Header()
	for k, v := range r.Header {
		h[k] = append([]string(nil), v...)
	}
	if r.RetryAfter != "" {
		h.Set("Retry-After", r.RetryAfter)
	}
	if r.Location != "" {
		h.Set("Location", r.Location)
	}
	body := r.Body
	if body == "" {
		status := r.StatusCode()
		if status >= 200 && status < 300 {
			body = `{"success":true}`
		} else {
			body = errorBody(http.StatusText(status))
		}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(r.StatusCode())
	_, _ = io.WriteString(w, body)
}

func errorBody(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}

// print writes the events of an accepted batch to Options.Print, one line each, in one write.
func (s *Server) print(events [][]byte) {
	if s.opts.Print == nil || len(events) == 0 {
		return
	}
	var b bytes.Buffer
	for _, ev := range events {
		// An event spread over lines (a pretty-printed body) is compacted onto one.
		if !bytes.ContainsAny(ev, "\r\n") || json.Compact(&b, ev) != nil {
			b.Write(ev)
		}
		b.WriteByte('\n')
	}
	s.printMu.Lock()
	defer s.printMu.Unlock()
	_, _ = s.opts.Print.Write(b.Bytes())
}

func (s *Server) log(rec *Request) {
	s.mu.Lock()
	r := *rec
	s.mu.Unlock()
	retry := r.Header.Get("X-Retry-Count")
	s.opts.Logger.Info("request",
		"seq", r.Seq, "method", r.Method, "path", r.Path, "status", r.Response.Status,
		"outcome", string(r.Outcome), "events", r.EventCount, "duplicates", r.Duplicates,
		"retry_count", retry, "wire_bytes", r.WireBytes, "gzip", r.Gzip)
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
