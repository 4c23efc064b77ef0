package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// bench runs the suite and collects its results.
type bench struct {
	opt    options
	gen    payloadFunc // the events of the run
	root   string      // temporary directory of this run
	log    io.Writer
	start  time.Time
	load0  string // /proc/loadavg at the start
	failed int

	bolt        float64 // bbolt ceiling, events/s
	peers       *peerResults
	enq         map[int]enqueueResult
	hold        *holdResult
	restart     *restartResult
	encrypt     *encryptResults // encrypt.go: the agent section without and with encryption at rest, in turns
	extraEnv    []string        // added to every agent's environment (the encrypt section's key)
	faults      *drainResult
	faultPeers  *faultPeerResults // faultpeers.go
	outage      []outageResult    // outage.go: upload.concurrency auto, 4, then 1
	e2eLib      *e2eResult
	e2eAg       *e2eAgentResult
	kafka       *kafkaResult     // kafka.go
	sources     *sourcesResult   // sources.go
	errs        map[string]error // by step: "ceiling", "enqueue", "hold", "restart", "hold-encrypted", "faults", "e2e-lib", "e2e-agent", "sources"
	enqueueErrs map[int]error
}

func newBench(o options, log io.Writer) (*bench, error) {
	gen := payloadFunc(realTrack)
	root, err := os.MkdirTemp(o.dir, "outbox-bench-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	return &bench{
		opt: o, gen: gen, root: root, log: log, start: time.Now(), load0: loadavg(),
		enq: map[int]enqueueResult{}, errs: map[string]error{}, enqueueErrs: map[int]error{},
	}, nil
}

// cleanup removes the run's directory unless -keep.
func (b *bench) cleanup() {
	if b.opt.keep {
		fmt.Fprintf(b.log, "kept %s\n", b.root)
		return
	}
	_ = os.RemoveAll(b.root)
}

// progress logs a line on stderr with the time since the start.
func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// fail records a failed step.
func (b *bench) fail(step string, err error) {
	b.failed++
	b.errs[step] = err
	b.progress("%s failed: %v", step, err)
}

// dir makes a fresh directory under the run's root.
func (b *bench) dir(name string) string {
	d := filepath.Join(b.root, name)
	_ = os.RemoveAll(d)
	return d
}

// drop removes a data directory once its step is done (1M events take ~600 MB).
func (b *bench) drop(d string) {
	if !b.opt.keep {
		_ = os.RemoveAll(d)
	}
}

func (b *bench) runSections(ctx context.Context) {
	on := map[string]bool{}
	for _, s := range strings.Split(b.opt.only, ",") {
		on[s] = true
	}
	steps := []struct {
		name string
		fn   func(context.Context)
	}{
		{"peers", b.runPeers}, {"ceiling", b.runCeilings}, {"enqueue", b.runEnqueue}, {"agent", b.runAgent}, {"encrypt", b.runEncrypt},
		{"faults", b.runFaults}, {"faultpeers", b.runFaultPeers}, {"outage", b.runOutage}, {"e2e", b.runE2E}, {"sources", b.runSources}, {"kafka", b.runKafka},
	}
	for _, s := range steps {
		if on[s.name] && ctx.Err() == nil {
			s.fn(ctx)
		}
	}
}

func (b *bench) runCeilings(context.Context) {
	d := b.dir("ceiling")
	if err := os.MkdirAll(d, 0o700); err != nil {
		b.fail("ceiling", err)
		return
	}
	defer b.drop(d)
	b.progress("bbolt ceiling: %s values of 500 bytes, 1000 per fsync'd tx", thousands(int64(b.opt.ceilingEvents)))
	var err error
	if b.bolt, err = boltCeiling(d, 500, b.opt.ceilingEvents); err != nil {
		b.fail("ceiling", err)
	}
}

func (b *bench) runEnqueue(ctx context.Context) {
	s, err := startSink(pausedScript())
	if err != nil {
		b.fail("enqueue", err)
		return
	}
	defer s.Close()
	for _, g := range []int{1, 8, 64} {
		b.progress("library Enqueue: %d goroutine(s) for %s", g, b.opt.enqueueFor)
		d := b.dir(fmt.Sprintf("enqueue-%d", g))
		r, err := libraryEnqueue(ctx, enqueueLoad{gen: b.gen, dir: d, endpoint: s.endpoint(), goroutines: g, d: b.opt.enqueueFor})
		b.drop(d)
		if err != nil {
			b.failed++
			b.enqueueErrs[g] = err
			b.progress("enqueue %d failed: %v", g, err)
			continue
		}
		b.enq[g] = r
	}
}

func (b *bench) runAgent(ctx context.Context) {
	if _, err := os.Stat(b.opt.bin); err != nil {
		b.fail("hold", fmt.Errorf("%s: %w (run `make build` or pass -outbox)", b.opt.bin, err))
		return
	}
	d := b.dir("agent")
	defer b.drop(d)
	b.progress("agent: ingest %s events over POST /v1/batch (%d clients × %d), collector paused; then hold %s and SIGTERM",
		thousands(int64(b.opt.events)), b.opt.clients, b.opt.perRequest, b.opt.hold)
	h, err := b.agentHold(ctx, d, b.opt.hold)
	if err != nil {
		b.fail("hold", err)
		return
	}
	b.hold = &h
	b.progress("agent: restart on %s queued events and drain them to a live sink", thousands(h.queued))
	r, err := b.agentRestartDrain(ctx, d, b.opt.events)
	if err != nil {
		b.fail("restart", err)
		return
	}
	b.restart = &r
}

func (b *bench) runFaults(ctx context.Context) {
	d := b.dir("faults")
	defer b.drop(d)
	n := b.opt.faultEvents
	b.progress("faults: fill %s events, drain them against 20%% 503 / 5%% 429 + Retry-After: 1", thousands(int64(n)))
	if err := fillQueue(d, b.gen, 0, n); err != nil {
		b.fail("faults", err)
		return
	}
	script, err := faultScript(b.opt.seed)
	if err != nil {
		b.fail("faults", err)
		return
	}
	r, err := drainInProcess(ctx, d, n, script, b.opt.drainLimit)
	if err != nil {
		b.fail("faults", err)
		return
	}
	b.faults = &r
}

func (b *bench) runE2E(ctx context.Context) {
	n := b.opt.events
	d := b.dir("e2e-lib")
	b.progress("end to end (library): %s events, %d producers × %d per Enqueue → queue → drain → sink",
		thousands(int64(n)), b.opt.producers, b.opt.perCall)
	r, err := e2eLibrary(ctx, libraryLoad{gen: b.gen, dir: d, events: n, producers: b.opt.producers, perCall: b.opt.perCall, limit: b.opt.drainLimit})
	b.drop(d)
	if err != nil {
		b.fail("e2e-lib", err)
	} else {
		b.e2eLib = &r
	}
	if _, err := os.Stat(b.opt.bin); err != nil {
		b.fail("e2e-agent", fmt.Errorf("%s: %w (run `make build` or pass -outbox)", b.opt.bin, err))
		return
	}
	d = b.dir("e2e-agent")
	defer b.drop(d)
	b.progress("end to end (agent): %s events over POST /v1/batch while the agent drains to a live sink", thousands(int64(n)))
	a, err := b.e2eAgent(ctx, d, n)
	if err != nil {
		b.fail("e2e-agent", err)
		return
	}
	b.e2eAg = &a
}

// header describes the run: sizes, machine, Go, load.
func (b *bench) header(took time.Duration) string {
	return fmt.Sprintf("outbox-bench: N=%s Segment track events of about 545 bytes from %d templates, faults N=%s, ceilings %s events; flags: %q\n"+
		"machine: %d CPUs (%s), %s %s/%s; loadavg at start %s, at end %s; suite took %s\n",
		thousands(int64(b.opt.events)), trackTemplates, thousands(int64(b.opt.faultEvents)), thousands(int64(b.opt.ceilingEvents)),
		strings.Join(os.Args[1:], " "), runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		b.load0, loadavg(), took.Round(time.Second))
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
