package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/spf13/cobra"
)

// sinkOptions are the flags of `outbox sink`.
type sinkOptions struct {
	listen   string
	fail     string
	writeKey string
	print    bool
}

func newSinkCommand(a *app) *cobra.Command {
	o := &sinkOptions{}
	cmd := &cobra.Command{
		Use:   "sink",
		Short: "Run a local test collector that prints every batch it receives",
		Long: `Run a small Segment-compatible collector: it accepts POST /v1/batch (plain or gzip),
counts the events and duplicate messageIds, and prints one line per request; with --print, also
each event of every accepted batch, one JSON line each, as it arrived. Point an agent at
it with --endpoint http://127.0.0.1:8090/v1/batch to watch events flow without an account.
GET /stats answers its counters as JSON.

--fail scripts faults: a comma-separated list of items; an item is a response followed by
optional ":"-separated modifiers.
  responses  a status code (100-599); ok (200); reset (also written reset-before-body: the
             connection is reset before the body is read); reset-after-body; hang (no answer
             until the client gives up)
  modifiers  xN (repeat N times); N% (a chance); default (the answer once the steps are used
             up); ra=VALUE (Retry-After, raw, or ra=date+30s); delay=DUR (wait before
             answering); loc=URL (Location); body=TEXT (response body)
A modifier never stands alone: a slow answer is 200:delay=2s, not delay=2s. Examples:
  503x5                         five 503s, then 200
  429:ra=300                    one 429 with Retry-After: 300
  503:20%,429:5%:ra=1           20% 503, 5% 429 + Retry-After: 1, the rest 200 (add seed=N to repeat)
  500x3,503:ra=2:default        three 500s, then 503 + Retry-After: 2 for ever
  reset,reset-after-body,hang   a reset before the body, one after it, one request left hanging
  200:delay=2s:default          every answer is a 200 after 2s
Steps are played in order; "N%" items are chances drawn after the steps; "default" is the
answer once the steps are used up (200 when unset).

--write-key makes the sink require that key as the Basic auth username (401 otherwise). It is a
test collector's key, not a secret of yours; real keys belong in OUTBOX_UPLOAD_WRITE_KEY.

Stop it with Ctrl-C; it prints its totals.`,
		Example: `  outbox sink
  outbox sink --print                         # every event received, one JSON line each
  outbox sink --listen 127.0.0.1:9000 --fail '503x3'
  outbox sink --fail '429:ra=300:default'     # rate-limit everything
  outbox sink --fail '503:20%,429:5%:ra=1,seed=7'`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(a, cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:8090", "address to listen on (host:port)")
	f.StringVar(&o.fail, "fail", "", "fault script (see above); empty accepts everything")
	f.StringVar(&o.writeKey, "write-key", "", "require this Basic auth username (a test key)")
	f.BoolVar(&o.print, "print", false, "print each event of every accepted batch, one JSON line each")
	return cmd
}

func (o *sinkOptions) run(a *app, cmd *cobra.Command) error {
	script, err := sink.ParseFaults(o.fail)
	if err != nil {
		return usageErrorf("--fail %q: %w%s", o.fail, err, modifierHint(o.fail))
	}
	sigs := a.watchSignals()
	defer sigs.Stop()
	out := &lockedWriter{w: cmd.OutOrStdout()} // the log lines and the printed events
	opts := sink.Options{
		WriteKey: o.writeKey,
		Script:   script,
		Logger:   slog.New(slog.NewTextHandler(out, nil)),
	}
	if o.print {
		opts.Print = out
	}
	s, err := sink.Start(o.listen, opts)
	if err != nil {
		return fmt.Errorf("%w; pick another address with --listen", err)
	}
	fmt.Fprintf(out, "sink listening on %s; send batches to %s/v1/batch (Ctrl-C to stop)\n", s.Addr(), s.URL())
	select {
	case <-sigs.C:
	case <-cmd.Context().Done():
	}
	_ = s.Close()
	st := s.Stats()
	fmt.Fprintf(out, "sink stopped: %d requests, %d batches accepted, %d events accepted (%d unique, %d duplicates), %d rejected\n",
		st.Requests, st.Batches, st.Events, st.Unique, st.Duplicates, st.Rejected)
	return nil
}

// lockedWriter serialises the writes of the sink's logger and its printed events to one writer.
type lockedWriter struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// modifierHint explains a fault item that starts with a modifier, the mistake the old help invited
// ("delay=2s" alone); "" when no item does.
func modifierHint(spec string) string {
	for _, item := range strings.Split(spec, ",") {
		for _, m := range []string{"delay=", "ra=", "loc=", "body="} {
			if strings.HasPrefix(strings.TrimSpace(item), m) {
				return fmt.Sprintf("; %s is a modifier, not a response: put it after one, e.g. 200:%s", m, strings.TrimSpace(item))
			}
		}
	}
	return ""
}
