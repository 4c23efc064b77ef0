package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

// options are the command-line flags.
type options struct {
	events          int           // N: events of the agent, drain and end-to-end runs
	faultEvents     int           // events of the drain under faults and of the outage runs
	faultPeerEvents int           // events each client sends in the side-by-side runs under faults
	outage          time.Duration // length of the total outage
	ceilingEvents   int           // events of the bbolt and gzip ceilings
	enqueueFor      time.Duration // length of each library Enqueue run
	clients         int           // concurrent HTTP clients of the ingest load
	perRequest      int           // events per ingest request
	producers       int           // goroutines of the library end-to-end run
	perCall         int           // events per Enqueue call in the library end-to-end run
	shutdownTimeout time.Duration // shutdown.timeout given to the agent
	hold            time.Duration // how long the agent holds N events before SIGTERM
	drainLimit      time.Duration // give up on one drain after this long
	bin             string        // the outbox binary
	dir             string        // where the temporary data directories go
	keep            bool          // keep the data directories and agent logs
	quick           bool
	only            string // comma-separated sections
	seed            uint64 // fault script seed
	cpuprofile      string
	agentProfile    string // directory for CPU profiles of the several-sources row's agents
	peerEvents      int    // events each peer-comparison client sends
	peerRounds      int    // rounds of the peer comparison (medians)
	peersDir        string // the bench/peers module
	peerFaults      string // the peers' collector script (sink fault spec); "" answers 200 at once
	peerClients     string // comma-separated clients of the peer comparison
	child           string // internal: run one outbox client as a child process (peers section)
	childEvents     string // internal: the child's events file
	childEndpoint   string // internal: the child's collector
	childDir        string // internal: the child's data directory
}

// allSections are the sections of the suite, in run order.
func allSections() []string {
	return []string{"peers", "ceiling", "enqueue", "agent", "encrypt", "faults", "faultpeers", "outage", "e2e", "sources", "kafka"}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("outbox-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `outbox-bench: outbox's benchmark suite and load generator (docs/BENCHMARKS.md).

It prints one table: outbox side by side with posthog-go (EnqueueAsync from one goroutine,
Enqueue from 64 goroutines, the agent fed over HTTP; each client in its own process, figures
as ratios to the peer's), durable ingest (agent HTTP and library Enqueue) against a raw bbolt
ceiling, the drain of N queued events, the drain under faults, end to end, the agent's
memory, restart and SIGTERM times and its file size after a drain. The agent rows run the
real binary (-outbox, built by 'make build') as a subprocess.

Usage: go run ./cmd/outbox-bench [flags]

`)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.events, "events", 1_000_000, "N: events queued, drained and sent end to end (-quick: 100000)")
	fs.IntVar(&o.faultEvents, "fault-events", 100_000, "events drained under faults and through the outage; bounded by real Retry-After and backoff waits (-quick: 20000)")
	fs.IntVar(&o.faultPeerEvents, "fault-peer-events", 200_000, "events each client sends in the side-by-side runs under faults; a run must span several backoffs and Retry-After pauses to measure a rate (-quick: 10000)")
	fs.DurationVar(&o.outage, "outage", 30*time.Second, "length of the collector's total outage (real time) (-quick: 5s)")
	fs.IntVar(&o.ceilingEvents, "ceiling-events", 200_000, "events written for the bbolt ceiling and compressed for the gzip ceiling (-quick: 50000)")
	fs.DurationVar(&o.enqueueFor, "enqueue-for", 5*time.Second, "length of each library Enqueue run (-quick: 2s)")
	fs.IntVar(&o.clients, "clients", 8, "concurrent HTTP clients of the agent ingest load")
	fs.IntVar(&o.perRequest, "per-request", 100, "events per POST /v1/batch request")
	fs.IntVar(&o.producers, "producers", 64, "goroutines calling Enqueue in the library end-to-end run")
	fs.IntVar(&o.perCall, "per-call", 1, "events per Enqueue call in the library end-to-end run")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 25*time.Second, "shutdown.timeout given to the agent")
	fs.DurationVar(&o.hold, "hold", 2*time.Second, "how long the agent holds N events (memory sampled) before SIGTERM")
	fs.DurationVar(&o.drainLimit, "drain-limit", 5*time.Minute, "give up on one drain or end-to-end run after this long")
	fs.StringVar(&o.bin, "outbox", "bin/outbox", "path of the outbox binary (make build)")
	fs.StringVar(&o.dir, "dir", "", "parent of the temporary data directories (default $TMPDIR); needs about 3 KB per event of N free")
	fs.BoolVar(&o.keep, "keep", false, "keep the data directories and agent logs")
	fs.BoolVar(&o.quick, "quick", false, "small sizes for a quick check (N 100000, faults 20000, ceilings 50000, 2s Enqueue runs)")
	fs.StringVar(&o.only, "only", strings.Join(allSections(), ","), "comma-separated sections to run: "+strings.Join(allSections(), ","))
	fs.IntVar(&o.peerEvents, "peer-events", 200_000, "events each client sends in the peer comparison (-quick: 50000)")
	fs.IntVar(&o.peerRounds, "peer-rounds", 3, "rounds of the peer comparison; the table shows medians (-quick: 1)")
	fs.StringVar(&o.peersDir, "peers", "bench/peers", "directory of the bench/peers Go module (posthog-go and the plain HTTP batch client)")
	fs.StringVar(&o.peerFaults, "peer-faults", "", `script of the peer comparison's collector, in outbox sink --fail syntax (e.g. "200:delay=50ms:default": a collector 50 ms away); empty answers 200 at once`)
	fs.StringVar(&o.peerClients, "peer-clients", strings.Join(peerClients(), ","), "comma-separated clients of the peer comparison: "+strings.Join(peerClients(), ","))
	fs.StringVar(&o.child, "child", "", "internal: run one outbox client (async, async-bytes or enqueue64) and print its figures")
	fs.StringVar(&o.childEvents, "child-events", "", "internal: events file of -child")
	fs.StringVar(&o.childEndpoint, "child-endpoint", "", "internal: collector of -child")
	fs.StringVar(&o.childDir, "child-dir", "", "internal: data directory of -child")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the fault script")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of this process (the in-process library runs) to this file")
	fs.StringVar(&o.agentProfile, "agent-profile", "", "write CPU profiles of the sources section's agents (debug.pprof_listen, 60 s from the end of the backlog's ingest) to sources-1.pprof and sources-8.pprof in this directory")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["events"] {
			o.events = 100_000
		}
		if !set["fault-events"] {
			o.faultEvents = 20_000
		}
		if !set["fault-peer-events"] {
			o.faultPeerEvents = 10_000
		}
		if !set["outage"] {
			o.outage = 5 * time.Second
		}
		if !set["ceiling-events"] {
			o.ceilingEvents = 50_000
		}
		if !set["enqueue-for"] {
			o.enqueueFor = 2 * time.Second
		}
		if !set["peer-events"] {
			o.peerEvents = 50_000
		}
		if !set["peer-rounds"] {
			o.peerRounds = 1
		}
	}
	if o.child != "" {
		return o, nil
	}
	if o.events < o.perRequest || o.faultEvents < 1000 || o.faultPeerEvents < 1000 || o.outage <= 0 || o.ceilingEvents < 1000 || o.clients < 1 ||
		o.perRequest < 1 || o.producers < 1 || o.perCall < 1 || o.peerEvents < 1000 || o.peerRounds < 1 {
		return o, fmt.Errorf("sizes must be positive (-events at least -per-request; -ceiling-events, -fault-events and -fault-peer-events at least 1000)")
	}
	for _, s := range strings.Split(o.only, ",") {
		if !contains(allSections(), s) {
			return o, fmt.Errorf("-only: unknown section %q (want %s)", s, strings.Join(allSections(), ","))
		}
	}
	for _, c := range strings.Split(o.peerClients, ",") {
		if !contains(peerClients(), c) {
			return o, fmt.Errorf("-peer-clients: unknown client %q (want %s)", c, strings.Join(peerClients(), ","))
		}
	}
	bin, err := absBin(o.bin)
	if err != nil {
		return o, err
	}
	o.bin = bin
	return o, nil
}

// absBin makes the binary's path absolute: the agent is started in its data directory's
// parent (startAgent), where a relative path such as the default bin/outbox would not resolve.
// A bare name is looked up in PATH, as a shell would.
func absBin(bin string) (string, error) {
	if !strings.ContainsRune(bin, filepath.Separator) {
		if p, err := exec.LookPath(bin); err == nil {
			bin = p
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", fmt.Errorf("-outbox %s: %w", bin, err)
	}
	return abs, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "outbox-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.child != "" {
		if err := runChild(ctx, o, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "outbox-bench -child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "outbox-bench:", err)
		os.Exit(1)
	}
}

// run runs the selected sections and prints the table to stdout; progress goes to stderr.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	stopProfile, err := startCPUProfile(o.cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	b, err := newBench(o, stderr)
	if err != nil {
		return err
	}
	defer b.cleanup()
	start := time.Now()
	b.runSections(ctx)
	fmt.Fprintln(stdout, b.header(time.Since(start)))
	writeTable(stdout, b.rows())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if b.failed > 0 {
		return fmt.Errorf("%d measurement(s) failed (see the errors above and in the table)", b.failed)
	}
	return nil
}

// startCPUProfile writes a CPU profile of this process to path until the returned stop is
// called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
