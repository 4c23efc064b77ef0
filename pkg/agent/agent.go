package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Agent serves the HTTP surfaces of the daemon over one uploader client: Segment-compatible
// ingest, the admin API, health and metrics. It does not own the client's lifetime until
// Shutdown, which closes it.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	client  *uploader.Client
	metrics *Metrics
	auth    *authenticator
	admin   *adminGate
	sources atomic.Pointer[SourcesConfig] // which source an ingest write key selects; swapped by Reconfigure (sources.go)
	refuse  *refusals
	// preAuth holds one token per body-key request whose body is being read before its
	// credential is known (ingest.go).
	preAuth chan struct{}
	body    *bodyReader
	evOpts  event.Options
	page    *statusPage
	handler http.Handler
	tls     *certReloader // nil: plain HTTP
	reloads reloadLog     // the last configuration reload (reload.go)

	// baseCtx is the parent of every request context; cancelled once the client is closed
	// so that flush waits end.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu       sync.Mutex // guards the fields below
	draining bool
	inflight sync.WaitGroup // ingest requests that passed the draining check
	srv      *http.Server
	served   bool
	shutdown chan struct{} // closed when Shutdown has finished
	shutErr  error

	health   storeHealth
	full     fullState
	flushing atomic.Bool    // a background flush is running
	bg       sync.WaitGroup // background flushes
}

// New validates cfg and builds an Agent over client. metrics may be nil (a fresh registry is
// used, and no uploader hooks feed it); to count uploads, create it with NewMetrics first and
// pass its Hooks to uploader.Open. The error names the configuration key at fault. New starts
// the status page's sampler (one goroutine, reading the client's stats once a second);
// Shutdown stops it.
func New(cfg Config, client *uploader.Client, metrics *Metrics) (*Agent, error) {
	if client == nil {
		return nil, errors.New("agent.New: nil uploader client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if metrics == nil {
		m, err := NewMetrics(nil)
		if err != nil {
			return nil, err
		}
		metrics = m
	}
	a := &Agent{
		cfg:      cfg,
		log:      cfg.Logger,
		client:   client,
		metrics:  metrics,
		auth:     newAuthenticator(cfg),
		admin:    newAdminGate(cfg),
		body:     newBodyReader(cfg.MaxRequestBytes),
		evOpts:   event.Options{Limits: event.Limits{MaxEventBytes: cfg.MaxEventBytes}},
		shutdown: make(chan struct{}),
	}
	now := time.Now
	if cfg.Clock != nil {
		now = cfg.Clock.Now
	}
	a.setSources(cfg.Sources)
	a.refuse = &refusals{log: a.log, now: now, counter: metrics.authRefused}
	a.auth.refused = a.refuse.refused
	a.preAuth = make(chan struct{}, maxPreAuthBodies)
	a.baseCtx, a.cancelBase = context.WithCancel(context.Background())
	metrics.setSource(func() gaugeValues { return gaugesFromStats(client.Stats()) })
	if cfg.QueueMaxBytes > 0 {
		if err := metrics.exportQueueMaxBytes(cfg.QueueMaxBytes); err != nil {
			return nil, err
		}
	}
	if err := a.startTLS(); err != nil {
		return nil, err
	}
	a.page = a.newStatusPage()
	a.handler = a.routes()
	a.bg.Go(func() { a.page.sampler.run(a.baseCtx) }) // ends in Shutdown
	return a, nil
}

// Handler returns the agent's routes, for callers that run their own http.Server.
func (a *Agent) Handler() http.Handler { return a.handler }

// Metrics returns the agent's metrics (registry, hooks).
func (a *Agent) Metrics() *Metrics { return a.metrics }

// ListenAndServe listens on cfg.Listen and serves until Shutdown or ctx ends; see Serve.
func (a *Agent) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("ingest.listen %q: %w", a.cfg.Listen, err)
	}
	return a.Serve(ctx, ln)
}

// Serve serves on ln until the agent is shut down. When ctx ends first, Serve runs Shutdown
// itself, bounded by cfg.ShutdownTimeout, and returns its error; callers that want to control
// the bound (a second signal cutting it short) call Shutdown themselves instead. Serve returns
// nil after a clean shutdown and may be called once.
func (a *Agent) Serve(ctx context.Context, ln net.Listener) error {
	a.mu.Lock()
	if a.draining || a.served {
		a.mu.Unlock()
		_ = ln.Close()
		return ErrShuttingDown
	}
	a.served = true
	a.srv = &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return a.baseCtx },
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	if a.tls != nil {
		a.srv.TLSConfig = a.tls.serverConfig()
	}
	srv := a.srv
	a.mu.Unlock()

	a.log.Info("agent listening", "listen", ln.Addr().String(), "auth", a.auth.enabled(),
		"admin", a.admin.mode(), "tls", a.tls != nil, "mtls", a.cfg.TLS.mutual(), "max_connections", a.cfg.MaxConnections)
	ln = limitListener(ln, a.cfg.MaxConnections)
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "") // certificates come from TLSConfig.GetCertificate
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			<-a.shutdown
			return a.shutErr
		}
		return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
		defer cancel()
		err := a.Shutdown(sctx)
		<-errc
		return err
	}
}

// Shutdown stops the agent in order: intake stops at once (ingest answers 503 with
// Retry-After, /readyz turns 503), in-flight ingest requests finish, the client is closed
// (its last upload pass, bounded by ctx), then the HTTP server stops. Admin routes, /metrics
// and /v1/status keep answering until the client is closed. Shutdown is bounded by ctx; a
// second call waits for the first to finish or for its own ctx to end.
func (a *Agent) Shutdown(ctx context.Context) error {
	a.mu.Lock()
	if a.draining {
		a.mu.Unlock()
		select {
		case <-a.shutdown:
			return a.shutErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	a.draining = true
	srv := a.srv
	a.mu.Unlock()
	a.log.Info("agent shutting down: intake stopped")

	drained := make(chan struct{})
	go func() { a.inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
	}

	err := a.client.Close(ctx)
	if err != nil {
		err = fmt.Errorf("closing uploader: %w", err)
	}
	a.cancelBase()
	a.bg.Wait()
	if srv != nil {
		if serr := srv.Shutdown(ctx); serr != nil {
			_ = srv.Close()
		}
	}
	a.shutErr = err
	close(a.shutdown)
	a.log.Info("agent stopped", "err", err)
	return err
}

// enter admits an ingest request unless shutdown has begun; the caller must call the
// returned func when done.
func (a *Agent) enter() (done func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.draining {
		return nil, false
	}
	a.inflight.Add(1)
	return a.inflight.Done, true
}

// isDraining reports whether Shutdown has begun.
func (a *Agent) isDraining() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.draining
}
