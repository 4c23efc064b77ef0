package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
)

// pprofServer serves net/http/pprof for `outbox run --pprof ADDR` (debug.pprof_listen). It has
// its own mux: the handlers that importing net/http/pprof adds to http.DefaultServeMux are
// never served. Profiles show the process's memory and code paths, so the address must be
// loopback (checked by validate) and profiling is off unless asked for.
type pprofServer struct {
	srv  *http.Server
	addr string // the address listened on (the real port when addr asked for :0)
	done chan struct{}
}

// startPprof listens on addr and serves the profiling endpoints under /debug/pprof/ until
// Close. An empty addr means off: it returns nil, nil.
func startPprof(addr string, allowedHosts []string, log *slog.Logger) (*pprofServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on debug.pprof_listen %s: %w; pick another port with --pprof, or leave it empty to turn profiling off", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also serves heap, goroutine, allocs, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &pprofServer{
		// The peer and Host checks of the admin routes: a web page cannot read profiles by
		// making its own name resolve to 127.0.0.1 (DNS rebinding).
		srv:  &http.Server{Handler: agent.LoopbackOnly(mux, allowedHosts), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server stopped", "err", err)
		}
	}()
	log.Info("pprof listening", "listen", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return p, nil
}

// Close stops the server; a profile being taken is cut short. A nil server is a no-op.
func (p *pprofServer) Close() {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		_ = p.srv.Close()
	}
	<-p.done
}
