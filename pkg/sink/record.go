package sink

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"net/http"
	"strconv"
	"time"
)

// Request is the record of one request the sink received (GET /stats excepted). Copies handed
// out share Header, Events and MessageIDs with the sink's record: treat them as read-only.
type Request struct {
	// Seq is the 1-based arrival order.
	Seq int
	// Time is when the request arrived (Options.Now).
	Time time.Time
	// Method, Path and Query are the request line's (Query without '?').
	Method, Path, Query string
	// RemoteAddr is the client's address; equal values across requests show a reused connection.
	RemoteAddr string
	// Header is a copy of the request headers (Authorization included; it is never logged).
	Header http.Header
	// Gzip is true when the body came with Content-Encoding: gzip.
	Gzip bool
	// WireBytes is the body size as received; BodyBytes after decompression.
	WireBytes, BodyBytes int64
	// SentAt is the body's top-level "sentAt" string, if any.
	SentAt string
	// EventCount is the number of events in the batch, retained or not.
	EventCount int
	// Events are the batch's events as sent, and MessageIDs their top-level messageIds ("" when
	// absent); both nil under Options.DiscardEvents.
	Events     []json.RawMessage
	MessageIDs []string
	// Response is the response as played: Status resolved to a code, a RetryAfterIn rendered
	// into RetryAfter.
	Response Response
	// Outcome is what happened; OutcomePending while a delay or hang is in progress.
	Outcome Outcome
	// Err says why the sink itself refused the request (bad body, auth, route), else "".
	Err string
	// Duplicates counts this batch's events whose messageId had been accepted before
	// (only for accepted batches).
	Duplicates int
}

// RetryCount parses the X-Retry-Count header: ok is false when it is absent; n is -1 when it is
// present but not an integer.
func (r Request) RetryCount() (n int, ok bool) {
	v := r.Header.Values("X-Retry-Count")
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return -1, true
	}
	return n, true
}

// Stats are the sink's counters; GET /stats serves them as JSON.
type Stats struct {
	Requests   int64 `json:"requests"`         // every recorded request
	Batches    int64 `json:"batches_accepted"` // batch requests answered 2xx
	Events     int64 `json:"events_accepted"`  // events in accepted batches, duplicates included
	Unique     int64 `json:"unique_events"`    // distinct messageIds accepted (events without one each count)
	Duplicates int64 `json:"duplicate_events"` // accepted events whose messageId was accepted before
	Bytes      int64 `json:"bytes_accepted"`   // decoded body bytes of accepted batches
	Rejected   int64 `json:"rejected"`         // requests answered non-2xx
	Resets     int64 `json:"resets"`           // connections reset
	Canceled   int64 `json:"canceled"`         // delays or hangs cut by the client or Close
}

// begin records a request as it starts being answered. The record must not be touched after
// this except through finish.
func (s *Server) begin(rec *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec.Seq = s.seq
	rec.Outcome = OutcomePending
	s.stats.Requests++
	s.records = append(s.records, rec)
	if m := s.opts.MaxRequests; m > 0 && len(s.records) >= 2*m {
		s.records = append([]*Request(nil), s.records[len(s.records)-m:]...)
	}
	s.signalLocked()
}

// finish settles a request's outcome and, for an accepted batch, counts its events.
// hashes are the messageId hashes of the events (0 for an event without one).
func (s *Server) finish(rec *Request, resp Response, out Outcome, hashes []uint64, events []json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec.Response = resp
	rec.Outcome = out
	switch out {
	case OutcomeAccepted:
		s.stats.Batches++
		s.stats.Events += int64(rec.EventCount)
		s.stats.Bytes += rec.BodyBytes
		for _, h := range hashes {
			if h == 0 {
				s.stats.Unique++
				continue
			}
			if s.seen[h] > 0 {
				s.stats.Duplicates++
				rec.Duplicates++
			} else {
				s.stats.Unique++
			}
			s.seen[h]++
		}
		if !s.opts.DiscardEvents {
			s.events = append(s.events, events...)
		}
	case OutcomeRejected:
		s.stats.Rejected++
	case OutcomeReset:
		s.stats.Resets++
	case OutcomeCanceled:
		s.stats.Canceled++
	}
	s.signalLocked()
}

// signalLocked wakes every waiter; s.mu must be held.
func (s *Server) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// hashID hashes a messageId for the dedupe set; 0 is reserved for "no messageId".
func (s *Server) hashID(id []byte) uint64 {
	if id == nil {
		return 0
	}
	h := maphash.Bytes(s.hashSeed, id)
	if h == 0 {
		h = 1
	}
	return h
}

// Requests returns a copy of the recorded requests in arrival order (the most recent
// Options.MaxRequests when that is set).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.records
	if m := s.opts.MaxRequests; m > 0 && len(recs) > m {
		recs = recs[len(recs)-m:]
	}
	out := make([]Request, len(recs))
	for i, r := range recs {
		out[i] = *r
	}
	return out
}

// Accepted returns the recorded requests whose batch was accepted, in arrival order.
func (s *Server) Accepted() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Outcome == OutcomeAccepted {
			out = append(out, r)
		}
	}
	return out
}

// Events returns the events of accepted batches in acceptance order, duplicates included
// (empty under Options.DiscardEvents).
func (s *Server) Events() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.events...)
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Duplicates is the number of accepted events whose messageId had been accepted before.
func (s *Server) Duplicates() int64 { return s.Stats().Duplicates }

// Deliveries is how many times an event with this messageId was accepted (0: never).
func (s *Server) Deliveries(messageID string) int {
	h := s.hashID([]byte(messageID))
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.seen[h])
}

// WaitEvents blocks until at least n distinct events (Stats.Unique) were accepted, ctx ends
// (its error is returned) or the sink closes (ErrClosed).
func (s *Server) WaitEvents(ctx context.Context, n int) error {
	return s.Wait(ctx, func(st Stats) bool { return st.Unique >= int64(n) })
}

// WaitRequests blocks until at least n requests were recorded (including ones still pending in
// a delay or hang), ctx ends or the sink closes.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.Wait(ctx, func(st Stats) bool { return st.Requests >= int64(n) })
}

// Wait blocks until cond holds for the counters, ctx ends (its error is returned) or the sink
// closes (ErrClosed). cond is called with the lock held: it must not call the Server.
func (s *Server) Wait(ctx context.Context, cond func(Stats) bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(s.stats), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}
