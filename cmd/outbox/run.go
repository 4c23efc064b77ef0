package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/config"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/segment"
	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/spf13/cobra"
)

// devSinkAddr is where `outbox run --dev` starts its local collector (a free port when taken).
const devSinkAddr = "127.0.0.1:8090"

type runOptions struct {
	dev   bool
	print bool // with dev: the local collector prints each event it accepts
}

func newRunCommand(a *app) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the agent: accept events over HTTP, store them, upload them in batches",
		Long: `Run the agent. It listens on ingest.listen (default 127.0.0.1:8089) and speaks Segment's
HTTP tracking API (POST /v1/batch, /v1/track, /v1/identify, ...), so an existing Segment SDK
only needs its host pointed here. Every accepted event is on disk (data_dir) before the answer;
one worker uploads batches to upload.endpoint, with retries and dead letters.

Admin and health: GET /v1/status, POST /v1/flush, /v1/dead..., GET /healthz, /readyz, /metrics.
The status page is GET / (open http://127.0.0.1:8089/ in a browser): charts of the last hour,
the retry state, the last results and the dead letters.

--pprof 127.0.0.1:6060 (debug.pprof_listen) serves Go's profiling endpoints under /debug/pprof/
on that address; only loopback addresses are accepted, and it is off by default.

Stopping: the first SIGTERM or SIGINT stops intake (503), cuts retry waits short and makes one
last upload pass bounded by shutdown.timeout (default 25s), then exits 0; what is not uploaded
stays on disk and goes first at the next start. A second signal exits at once (the store is
still closed cleanly). Give your supervisor a stop timeout above shutdown.timeout (systemd
TimeoutStopSec, Kubernetes terminationGracePeriodSeconds).

--dev also starts a local collector (like 'outbox sink') on 127.0.0.1:8090, or a free port, that
prints a line per batch, and points upload.endpoint at it: events flow with no account.
--dev --print also prints each event the collector accepts, one JSON line each.

Exit codes: 0 after a clean stop; 1 when the data directory is in use or serving fails; 2 for
a configuration error; 3 when the data file is damaged (the message names 'outbox recover').`,
		Example: `  outbox run --dev
  outbox run --dev --print
  outbox run --config /etc/outbox/config.yaml
  OUTBOX_UPLOAD_WRITE_KEY=... outbox run --data-dir /var/lib/outbox --listen 127.0.0.1:8089`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	cmd.Flags().BoolVar(&o.dev, "dev", false, "also run a local collector that prints batches, and upload to it")
	cmd.Flags().BoolVar(&o.print, "print", false, "with --dev: the local collector also prints each event it receives")
	cmd.Flags().String("pprof", "", "serve net/http/pprof on this loopback host:port, e.g. 127.0.0.1:6060 (key debug.pprof_listen; default off)")
	return cmd
}

func (o *runOptions) run(a *app, cmd *cobra.Command) error {
	if o.print && !o.dev {
		return usageErrorf("--print needs --dev: it prints what the local collector receives (for a collector of its own, run `outbox sink --print`)")
	}
	lc, err := a.load(cmd)
	if err != nil {
		return err
	}
	cfg := lc.Config
	log, level := a.logger(&cfg)
	lc.WarnUnknownEnv(log)
	sigs := a.watchSignals()
	defer sigs.Stop()
	hups := a.watchHangups()
	defer hups.Stop()

	if o.dev {
		s, err := startDevSink(cmd.OutOrStdout(), o.print)
		if err != nil {
			return err
		}
		defer s.Close()
		cfg.Upload.Endpoint = s.URL() + "/v1/batch"
		if lc.Sources["batch.interval"].Kind == "default" {
			cfg.Batch.Interval = time.Second // see events arrive quickly
		}
		fmt.Fprintf(cmd.OutOrStdout(), "dev: local collector on %s; uploads go there (batch.interval %s)\n", s.URL(), cfg.Batch.Interval)
	}

	// a.load validated the configuration, the uploader's and agent's rules included (the one
	// path `outbox config` shares); --dev only swaps in values that pass them.
	ucfg := cfg.UploaderConfig()
	acfg := cfg.AgentConfig(log)
	metrics, err := agent.NewMetrics(nil)
	if err != nil {
		return err
	}
	// Damage found after Open (the background check of a large file, or a read that reaches a
	// damaged page) is reported through OnCorrupt.
	corrupt := make(chan error, 1)
	hooks := metrics.Hooks()
	hooks.OnCorrupt = func(err error) {
		select {
		case corrupt <- err:
		default:
		}
	}
	destOpts, err := cfg.DestinationOptions(log)
	if err != nil {
		return &usageError{err: err}
	}
	client, err := segment.Open(ucfg, append([]uploader.Option{uploader.WithLogger(log), uploader.WithHooks(hooks)}, destOpts...)...)
	if err != nil {
		if errors.Is(err, errs.ErrInvalidConfig) {
			return usageErrorf("configuration: %w", err)
		}
		return storeError(err)
	}
	ag, err := agent.New(acfg, client, metrics)
	if err != nil {
		closeQuick(client)
		return usageErrorf("configuration: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Agent.Listen)
	if err != nil {
		closeQuick(client)
		return fmt.Errorf("cannot listen on ingest.listen %s: %w; is another agent running there? pick another address with --listen", cfg.Agent.Listen, err)
	}
	pp, err := startPprof(cfg.Debug.PprofListen, cfg.Agent.Admin.AllowedHosts, log)
	if err != nil {
		_ = ln.Close()
		closeQuick(client)
		return err
	}
	defer pp.Close()
	log.Info("outbox agent ready", append(append([]any{"listen", ln.Addr().String(), "tls", cfg.Agent.TLS.Enabled(), "data_dir", cfg.DataDir},
		cfg.DestinationAttrs()...), "shutdown_timeout", cfg.Agent.ShutdownTimeout.String())...)

	reload := config.NewReloader(func() (*config.Loaded, error) { return a.load(cmd) }, lc.Config, cfg, log, level, client, ag)
	hups.serve(log, reload)
	serveErr := make(chan error, 1)
	go func() { serveErr <- ag.Serve(context.Background(), ln) }()
	sd := startSupervisor(log) // systemd READY/STOPPING/watchdog; no-op outside systemd (notify.go)
	defer sd.Close()
	sd.Ready()
	select {
	case err := <-corrupt:
		// Damage found after Open: intake has stopped; exit 3 naming recover.
		log.Error("data file is damaged (found by the background check or a later read); stopping", "err", err)
		sd.Stopping()
		_ = gracefulStop(log, sigs.C, reload.Current().Agent.ShutdownTimeout, ag.Shutdown)
		return err
	case err := <-serveErr:
		// Serving failed on its own; stop what remains, bounded as on a signal.
		sd.Stopping()
		_ = gracefulStop(log, sigs.C, reload.Current().Agent.ShutdownTimeout, ag.Shutdown)
		return err
	case sig := <-sigs.C:
		cfg = reload.Current() // shutdown.timeout changes live
		log.Info("signal received: stopping intake, last upload pass", "signal", sig.String(), "timeout", cfg.Agent.ShutdownTimeout.String())
	case <-cmd.Context().Done():
		cfg = reload.Current()
		log.Info("stopping: last upload pass", "timeout", cfg.Agent.ShutdownTimeout.String())
	}
	sd.Stopping()
	err = gracefulStop(log, sigs.C, cfg.Agent.ShutdownTimeout, ag.Shutdown)
	left := client.Stats().Queue.Events
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		log.Info("outbox agent stopped", "events_left", left)
		return nil
	}
	return fmt.Errorf("shutdown: %w (%d events stay queued on disk and go first at the next start)", err, left)
}

// closeQuick releases the data directory after a failed start.
func closeQuick(c *uploader.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// startDevSink starts the --dev collector, printing one line per request to out, and each
// accepted event too when printEvents.
func startDevSink(w io.Writer, printEvents bool) (*sink.Server, error) {
	out := &lockedWriter{w: w}
	opts := sink.Options{Logger: slog.New(slog.NewTextHandler(out, nil)).With("component", "dev_sink")}
	if printEvents {
		opts.Print = out
	}
	s, err := sink.Start(devSinkAddr, opts)
	if err != nil {
		s, err = sink.Start("127.0.0.1:0", opts)
	}
	if err != nil {
		return nil, fmt.Errorf("--dev: cannot start the local collector: %w", err)
	}
	return s, nil
}
