package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is the sink: an http.Handler recording and answering Segment batch requests, and,
// when made by Start, the HTTP server listening for them. Safe for concurrent use.
type Server struct {
	opts     Options
	hashSeed maphash.Seed
	done     chan struct{} // closed by Close: ends hangs, delays and waits
	once     sync.Once
	gzPool   sync.Pool // *gzip.Reader
	bufPool  sync.Pool // *bytes.Buffer, only under DiscardEvents

	printMu sync.Mutex // serialises the batches written to opts.Print

	srv *http.Server // nil for New
	ln  net.Listener
	url string

	mu      sync.Mutex // guards the fields below
	player  player
	seq     int
	records []*Request
	stats   Stats
	seen    map[uint64]uint32
	events  []json.RawMessage
	changed chan struct{} // closed and replaced on every change of stats or records
}

// New returns a sink that is an http.Handler, for mounting on a server of one's own
// (httptest.NewServer). Close it to release hanging requests. It fails only when
// opts.Script is invalid.
func New(opts Options) (*Server, error) {
	if err := opts.Script.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		opts:     opts.withDefaults(),
		hashSeed: maphash.MakeSeed(),
		done:     make(chan struct{}),
		player:   newPlayer(opts.Script),
		seen:     make(map[uint64]uint32),
		changed:  make(chan struct{}),
	}
	s.bufPool.New = func() any { return new(bytes.Buffer) }
	return s, nil
}

// Start listens on addr ("127.0.0.1:0" for tests) and serves the sink until Close.
func Start(addr string, opts Options) (*Server, error) {
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sink: listen on %s: %w", addr, err)
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Logger.Error("sink stopped serving", "err", err)
		}
	}()
	s.opts.Logger.Info("sink listening", "url", s.url)
	return s, nil
}

// URL is the base URL of a started sink ("http://127.0.0.1:PORT"); "" for New.
// Batches go to URL()+"/v1/batch".
func (s *Server) URL() string { return s.url }

// Addr is the listening address of a started sink; nil for New.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close ends hanging and delayed responses, wakes waiters with ErrClosed and, for a started
// sink, closes the listener and every connection. Records and counters stay readable.
// Calling it again does nothing.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		if s.srv != nil {
			err = s.srv.Close()
		}
	})
	return err
}

// SetScript replaces the script; the next request plays its first step and its generator
// restarts from its Seed.
func (s *Server) SetScript(sc Script) error {
	if err := sc.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.player = newPlayer(sc)
	return nil
}

// Remaining is the number of script steps not yet played.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.player.remaining()
}

func (s *Server) nextResponse() Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.player.nextResponse()
}

// ServeHTTP routes: POST /v1/batch and /v1/import take batches, GET /stats answers the
// counters; everything else is recorded and answered 404 (or 405 for a non-POST on a batch
// route), so a test can see that no GET was ever sent.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/stats":
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(s.Stats())
			return
		}
	case "/v1/batch", "/v1/import":
		if r.Method == http.MethodPost {
			s.serveBatch(w, r)
			return
		}
		s.refuse(w, r, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	s.refuse(w, r, http.StatusNotFound, "no route "+r.URL.Path)
}

// refuse records and answers a request the sink itself turns down.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	rec := s.newRecord(r)
	rec.Err = reason
	s.begin(rec)
	resp := Response{Status: status, Body: errorBody(reason)}
	s.finish(rec, resp, OutcomeRejected, nil, nil)
	s.log(rec)
	writeResponse(w, resp)
}

// context ends when the request's context ends or the sink closes.
func (s *Server) context(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
