package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
)

// sourceSink is the collector of the several-sources row: a loopback HTTP server that checks
// every upload against the write key it must carry and measures how long the small senders'
// events took. Unlike pkg/sink it reads each event's messageId and send time (the row needs
// both and pkg/sink keeps neither once it discards bodies), by a byte scan, not a JSON parse,
// so that it takes little of the cores the agent runs on.
//
// The check: an upload's Basic auth username is its write key; every event in it must be one
// whose sender uses that key (keyOf, by messageId). An upload with no key, or with an event
// of another key, is a violation, answered 200 all the same (a refusal would only make the
// agent send it again) and reported by the row as a failure.
type sourceSink struct {
	srv     *http.Server
	url     string
	keyOf   func(id int) string // the write key event id must arrive with
	backlog int                 // events 0 … backlog-1 are the big source's queued backlog
	total   int                 // every event of the run; done closes once all arrived

	accepting atomic.Bool  // false: every upload gets 429 Retry-After: 1 (resume)
	backlogIn atomic.Int64 // distinct backlog events arrived, for pacing the live senders
	done      chan struct{}
	gz        sync.Pool // *gzip.Reader

	mu         sync.Mutex // guards the fields below
	seen       []uint64   // bitset of the messageIds arrived
	unique     int
	duplicates int
	first      time.Time // the first accepted upload's arrival
	last       time.Time // when the last distinct event arrived
	latency    []time.Duration
	uploads    map[string]*keyUploads // by write key
	violations int
	violation  string // the first violation
}

// keyUploads counts one write key's uploads and their events.
type keyUploads struct{ uploads, events int }

// The markers the collector looks for in an event.
var (
	msgIDMark  = []byte(`"messageId":"msg-`)
	sentAtMark = []byte(`"bench_sent_ns":"`)
)

// sentDigits is the width of the send time in an event: Unix nanoseconds, zero-padded.
const sentDigits = 19

// startSourceSink serves on a free loopback port, answering 429 Retry-After: 1 to every upload
// until resume: the agent queues what it is sent and tries one batch a second meanwhile.
func startSourceSink(total, backlog int, keyOf func(id int) string) (*sourceSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	s := &sourceSink{
		url: "http://" + ln.Addr().String(), keyOf: keyOf, backlog: backlog, total: total,
		done: make(chan struct{}), seen: make([]uint64, (total+63)/64), uploads: map[string]*keyUploads{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/batch", s.serveBatch)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// endpoint is the collector's batch URL.
func (s *sourceSink) endpoint() string { return s.url + "/v1/batch" }

// close stops the server.
func (s *sourceSink) close() { _ = s.srv.Close() }

// resume accepts uploads from now on.
func (s *sourceSink) resume() { s.accepting.Store(true) }

// backlogArrived is how many of the backlog's events have arrived.
func (s *sourceSink) backlogArrived() int { return int(s.backlogIn.Load()) }

// serveBatch reads, checks and books one upload.
func (s *sourceSink) serveBatch(w http.ResponseWriter, r *http.Request) {
	if !s.accepting.Load() {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "paused", http.StatusTooManyRequests)
		return
	}
	body, err := s.read(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	key, _, _ := r.BasicAuth()
	s.book(key, body, now)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"success":true}`)
}

// read returns the upload's body, gunzipped when it says so.
func (s *sourceSink) read(r *http.Request) ([]byte, error) {
	var src io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, _ := s.gz.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(r.Body)
		} else {
			err = zr.Reset(r.Body)
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer s.gz.Put(zr)
		src = zr
	}
	return io.ReadAll(src)
}

// book checks the upload's events against its key and counts them.
func (s *sourceSink) book(key string, body []byte, now time.Time) {
	ids, sent, err := scanUpload(body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		s.first = now
	}
	u := s.uploads[key]
	if u == nil {
		u = &keyUploads{}
		s.uploads[key] = u
	}
	u.uploads++
	u.events += len(ids)
	switch {
	case err != nil:
		s.violate(err.Error())
	case key == "":
		s.violate("an upload carries no write key")
	}
	backlog, before := 0, s.unique
	for _, id := range ids {
		if id < 0 || id >= s.total {
			s.violate(fmt.Sprintf("event msg-%d is not one of the run's", id))
			continue
		}
		if want := s.keyOf(id); key != want {
			s.violate(fmt.Sprintf("an upload with the key of %s holds event msg-%d of %s", keyName(key), id, keyName(want)))
		}
		if s.seen[id/64]&(1<<(id%64)) != 0 {
			s.duplicates++
			continue
		}
		s.seen[id/64] |= 1 << (id % 64)
		s.unique++
		s.last = now
		if id < s.backlog {
			backlog++
		}
	}
	for _, t := range sent {
		s.latency = append(s.latency, now.Sub(time.Unix(0, t)))
	}
	s.backlogIn.Add(int64(backlog))
	if before < s.total && s.unique == s.total {
		close(s.done)
	}
}

// violate records a violation of the one-key-per-upload rule.
func (s *sourceSink) violate(what string) {
	if s.violations == 0 {
		s.violation = what
	}
	s.violations++
}

// keyName shows a bench write key in a message (they are the bench's own, not secrets).
func keyName(key string) string {
	if key == "" {
		return "no key"
	}
	return strconv.Quote(key)
}

// scanUpload returns the messageId counter of every event of body and the send times of
// those that carry one.
func scanUpload(body []byte) (ids []int, sent []int64, err error) {
	counters, err := numbersAfter(body, msgIDMark, idDigits, "an event's messageId is not msg- and 12 digits")
	if err != nil {
		return nil, nil, err
	}
	ids = make([]int, len(counters))
	for i, n := range counters {
		ids[i] = int(n)
	}
	sent, err = numbersAfter(body, sentAtMark, sentDigits, "an event's bench_sent_ns is not 19 digits")
	return ids, sent, err
}

// numbersAfter returns the number of n digits that follows each occurrence of mark in body;
// bad is the error when one does not.
func numbersAfter(body, mark []byte, n int, bad string) ([]int64, error) {
	var out []int64
	for rest := body; ; {
		i := bytes.Index(rest, mark)
		if i < 0 {
			return out, nil
		}
		rest = rest[i+len(mark):]
		v, ok := digits(rest, n)
		if !ok {
			return out, errors.New(bad)
		}
		out = append(out, v)
	}
}

// digits parses the n decimal digits that b starts with, followed by a quote.
func digits(b []byte, n int) (int64, bool) {
	if len(b) <= n || b[n] != '"' {
		return 0, false
	}
	var v int64
	for _, c := range b[:n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// sinkResult is what the collector saw over a run.
type sinkResult struct {
	unique, duplicates int
	span               time.Duration   // first upload → the last distinct event
	latency            []time.Duration // of the events that carried a send time, sorted
	uploads            map[string]keyUploads
	violations         int
	violation          string
}

// result reads the collector's figures.
func (s *sourceSink) result() sinkResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := sinkResult{unique: s.unique, duplicates: s.duplicates, span: s.last.Sub(s.first),
		latency: slices.Clone(s.latency), uploads: map[string]keyUploads{},
		violations: s.violations, violation: s.violation}
	slices.Sort(r.latency)
	for k, u := range s.uploads {
		r.uploads[k] = *u
	}
	return r
}

// quantile is the q-quantile of sorted (nearest rank); 0 when empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
