package main

import (
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/outboxhq/outbox/pkg/config"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Deps is everything the commands take from the process. main passes the real ones; tests pass
// buffers, a fixed environment and their own signal source.
type Deps struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer // logs and progress
	Environ []string  // KEY=value; only OUTBOX_* variables are read
	// Notify subscribes ch to SIGINT and SIGTERM and returns the function that unsubscribes;
	// nil means os/signal.
	Notify func(ch chan<- os.Signal) (stop func())
	// NotifyHangup subscribes ch to SIGHUP (outbox run reloads its configuration on it);
	// nil means os/signal.
	NotifyHangup func(ch chan<- os.Signal) (stop func())
	// IsTerminal reports whether w is an interactive terminal (`outbox flush` then draws a
	// progress bar; otherwise it prints plain lines). nil means: w is an *os.File on a terminal.
	IsTerminal func(w io.Writer) bool
}

// app is the state shared by the commands of one invocation.
type app struct {
	deps       Deps
	configFile string // --config
}

// NewRootCommand builds the outbox command tree. It reads no globals: everything comes from deps.
func NewRootCommand(deps Deps) *cobra.Command {
	if deps.Stdin == nil {
		deps.Stdin = strings.NewReader("")
	}
	if deps.Stdout == nil {
		deps.Stdout = io.Discard
	}
	if deps.Stderr == nil {
		deps.Stderr = io.Discard
	}
	if deps.Notify == nil {
		deps.Notify = func(ch chan<- os.Signal) func() {
			signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
			return func() { signal.Stop(ch) }
		}
	}
	if deps.IsTerminal == nil {
		deps.IsTerminal = func(w io.Writer) bool {
			f, ok := w.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		}
	}
	a := &app{deps: deps}
	root := &cobra.Command{
		Use:   "outbox",
		Short: "Durable, batching uploader for analytics events",
		Long: `outbox is a durable, batching uploader for analytics events.

Applications hand it events (Segment's HTTP API, or the Go library); it writes them to a local
disk queue before saying "accepted", and one worker drains the queue into batched HTTP uploads to
a collector (Segment's API by default). Outages, rate limits, restarts, crashes and SIGTERM never
lose an accepted event.

Configuration comes from one YAML file (--config, default ./outbox.yaml when present),
OUTBOX_* environment variables (OUTBOX_ + the key in upper case with "." as "_", e.g.
OUTBOX_UPLOAD_WRITE_KEY) and a few flags; flags beat the environment, which beats the file,
which beats the defaults. Secrets (write keys, tokens) are never flags. See config.example.yaml
and "outbox config".

Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.`,
		Example: `  outbox run --dev                     # agent + a local collector, no account needed
  outbox send '{"type":"track","event":"Signed Up","userId":"u1"}'
  outbox status
  OUTBOX_UPLOAD_WRITE_KEY=... outbox run --config /etc/outbox/config.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q; run 'outbox --help' for the list of commands", args[0])
			}
			return cmd.Help()
		},
	}
	root.SetIn(deps.Stdin)
	root.SetOut(deps.Stdout)
	root.SetErr(deps.Stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%w; run '%s --help' for usage", err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFile, "config", "", "YAML configuration file (default ./outbox.yaml when it exists)")
	pf.String("data-dir", "", "data directory, not empty (key data_dir; default ./outbox-data)")
	pf.String("listen", "", "ingest address host:port (key ingest.listen; default 127.0.0.1:8089)")
	pf.String("endpoint", "", "collector URL (key upload.endpoint; default https://api.segment.io/v1/batch)")
	pf.String("log-level", "", "debug, info, warn or error (key log.level; default info)")

	root.AddCommand(
		newRunCommand(a),
		newSendCommand(a),
		newStatusCommand(a),
		newFlushCommand(a),
		newReloadCommand(a),
		newHealthCommand(a),
		newDeadCommand(a),
		newForgetCommand(a),
		newInspectCommand(a),
		newCompactCommand(a),
		newRecoverCommand(a),
		newRekeyCommand(a),
		newKeygenCommand(),
		newSinkCommand(a),
		newConfigCommand(a),
		newVersionCommand(a),
	)
	return root
}

// load reads the configuration for cmd (its flags included). Its errors are usage errors.
func (a *app) load(cmd *cobra.Command) (*config.Loaded, error) {
	lc, err := config.Load(config.Input{File: a.configFile, Environ: a.deps.Environ, Flags: cmd.Flags()})
	if err != nil {
		return nil, &usageError{err: err}
	}
	return lc, nil
}

// logger builds the process logger (to stderr) from the log.* keys. Its level is the returned
// LevelVar, which a reload sets.
func (a *app) logger(c *config.Config) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	if l, ok := config.ParseLevel(c.Log.Level); ok { // validated by loadConfig
		level.Set(l)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(a.deps.Stderr, opts)), level
	}
	return slog.New(slog.NewTextHandler(a.deps.Stderr, opts)), level
}

// argsUsage wraps a cobra positional-argument check so that its error is a usage error.
func argsUsage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageErrorf("%w; run '%s --help' for usage", err, cmd.CommandPath())
		}
		return nil
	}
}
