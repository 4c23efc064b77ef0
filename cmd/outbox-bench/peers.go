package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
)

// The clients of the peer comparison, in run order within a round.
const (
	peerPosthog  = "posthog"       // posthog-go from one goroutine (bench/peers)
	peerAsync    = "async"         // outbox EnqueueAsync from one goroutine, the app's maps
	peerAsyncRaw = "async-bytes"   // the same with events the app json.Marshal'ed
	peerEnqueue  = "enqueue64"     // outbox Enqueue from 64 goroutines
	peerSegment  = "segment"       // plain HTTP batch client (analytics-go's way) → collector
	peerViaAgent = "segment-agent" // the same client → outbox agent → collector
)

func peerClients() []string {
	return []string{peerPosthog, peerAsync, peerAsyncRaw, peerEnqueue, peerSegment, peerViaAgent}
}

// peerRun is one client's run: what it reported, and for the agent run the agent's CPU and
// the time until the collector held every event.
type peerRun struct {
	childResult
	agentCPU  time.Duration // segment-agent: the agent's CPU over the span
	delivered int64         // events the collector received during the run
	unique    int64         // distinct messageIds it accepted during the run
	requests  int64         // batch requests it was sent during the run
	// sustained is the span from the first request to the one that brought the accepted
	// events to 90% of those given (fault runs only): the drain without its last retries.
	sustained time.Duration
}

func (r peerRun) rate() float64 { return float64(r.Events) / (float64(r.ElapsedNS) / 1e9) }

// commitTime is the mean time of the run's store commits (begin to fsync).
func (r peerRun) commitTime() time.Duration { return time.Duration(r.CommitNS / max(r.Commits, 1)) }

// busy is the share of the intake (first event to the last call returning) the writer spent
// committing.
func (r peerRun) busy() float64 { return float64(r.CommitNS) / float64(max(r.IntakeNS, 1)) }

func (r peerRun) cpuPerEvent() time.Duration {
	return time.Duration(r.CPUNS / max(r.Events, 1))
}

// peerResults are the runs of every round, by client.
type peerResults struct {
	runs map[string][]peerRun
	errs map[string]error
	n    int
	// ceiling64 is, per round, raw bbolt committing 64 puts of one event's size per fsync'd
	// transaction in a loop, measured right after that round's Enqueue ×64 on the same disk.
	ceiling64 []float64
}

// median returns the median of f over the client's runs (the lower middle for an even count).
func (p *peerResults) median(client string, f func(peerRun) float64) (float64, bool) {
	rs := p.runs[client]
	if len(rs) == 0 {
		return 0, false
	}
	return f(medianBy(rs, f)), true
}

// peerSink is a loopback pkg/sink that also takes posthog-go's POST /batch/ (its events are
// counted like Segment's).
type peerSink struct {
	*sink.Server
	srv *http.Server
	url string
}

// startPeerSink starts a peer collector scripted by faults that keeps the last keep request
// records (0: all).
func startPeerSink(faults string, keep int) (*peerSink, error) {
	sc, err := sink.ParseFaults(faults)
	if err != nil {
		return nil, fmt.Errorf("-peer-faults: %w", err)
	}
	s, err := sink.New(sink.Options{Script: sc, DiscardEvents: true, NoValidate: true, MaxRequests: keep})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/batch/" {
			r.URL.Path = "/v1/batch"
		}
		s.ServeHTTP(w, r)
	})
	p := &peerSink{Server: s, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String()}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *peerSink) Close() {
	_ = p.srv.Close()
	_ = p.Server.Close()
}

// runPeers writes the events file, builds bench/peers, and runs every client peerRounds times,
// one process at a time, against one loopback sink.
func (b *bench) runPeers(ctx context.Context) {
	p := &peerResults{runs: map[string][]peerRun{}, errs: map[string]error{}, n: b.opt.peerEvents}
	b.peers = p
	tools, err := b.peerTools(ctx, "peer-events.jsonl", b.opt.peerEvents)
	if err != nil {
		b.fail("peers", err)
		return
	}
	s, err := startPeerSink(b.opt.peerFaults, 16) // the counters are what the peer rows read
	if err != nil {
		b.fail("peers", err)
		return
	}
	defer s.Close()
	chosen := strings.Split(b.opt.peerClients, ",")
	for round := range b.opt.peerRounds {
		for _, client := range peerClients() {
			if ctx.Err() != nil || p.errs[client] != nil || !contains(chosen, client) {
				continue
			}
			b.progress("peers round %d/%d: %s, %s events", round+1, b.opt.peerRounds, client, thousands(int64(p.n)))
			r, err := b.peerRun(ctx, tools.run(client, s, round))
			if err != nil {
				b.failed++
				p.errs[client] = err
				b.progress("peers %s failed: %v", client, err)
				continue
			}
			p.runs[client] = append(p.runs[client], r)
			if client == peerEnqueue {
				if c := b.measureCeiling64(p); c > 0 {
					b.progress("peers: %s: %s, %.2f× the ceiling's %s; %.1f events and %s per commit (the ceiling's: %s), writer busy %.0f%% of the intake",
						client, rate(r.rate()), r.rate()/c, rate(c), float64(r.Events)/float64(max(r.Commits, 1)),
						ms(r.commitTime()), ms(ceilingCommit(c)), 100*r.busy())
				}
			}
		}
	}
}

// peerTools are what a client run needs: this binary (the outbox clients, as -child), the
// built bench/peers (posthog-go and the HTTP batch client) and an events file.
type peerTools struct{ self, peersBin, events string }

func (t peerTools) run(client string, s *peerSink, round int) peerCase {
	return peerCase{client: client, self: t.self, peersBin: t.peersBin, events: t.events, sink: s, round: round}
}

// peerTools writes n events to the file name under the run's directory and builds
// bench/peers (once per run).
func (b *bench) peerTools(ctx context.Context, name string, n int) (peerTools, error) {
	t := peerTools{events: filepath.Join(b.root, name), peersBin: filepath.Join(b.root, "peers")}
	if err := writeEvents(t.events, b.gen, n); err != nil {
		return t, err
	}
	self, err := os.Executable()
	if err != nil {
		return t, err
	}
	t.self = self
	if _, err := os.Stat(t.peersBin); err == nil {
		return t, nil
	}
	b.progress("peers: building %s (posthog-go %s)", b.opt.peersDir, "v1.5.2")
	build := exec.CommandContext(ctx, "go", "build", "-o", t.peersBin, ".")
	build.Dir = b.opt.peersDir
	if out, err := build.CombinedOutput(); err != nil {
		return t, fmt.Errorf("build %s: %w\n%s", b.opt.peersDir, err, out)
	}
	return t, nil
}

// measureCeiling64 measures the ceiling of Enqueue ×64 in the same round: bbolt committing 64
// puts of enqueuedEventBytes per fsync'd transaction, p.n events, on the bench's disk.
func (b *bench) measureCeiling64(p *peerResults) float64 {
	d := b.dir("ceiling64")
	defer b.drop(d)
	b.progress("peers: bbolt ceiling of Enqueue ×64, %s puts of %d bytes, 64 per fsync'd tx", thousands(int64(p.n)), enqueuedEventBytes)
	v, err := boltCeilingPerTx(d, enqueuedEventBytes, p.n, 64)
	if err != nil {
		b.progress("peers: bbolt ceiling of Enqueue ×64 failed: %v", err)
		return 0
	}
	p.ceiling64 = append(p.ceiling64, v)
	return v
}

// peerCase is one round of one client: which client, the binaries that run it (this bench,
// the peers module's), its events file and the collector it sends to.
type peerCase struct {
	client, self, peersBin, events string
	sink                           *peerSink
	round                          int
	// lossy is a run against a collector that fails requests, of its own (so its distinct
	// messageIds are the run's): posthog-go may give up on events, and its run ends when its
	// Close returns, with what the collector holds then; the others end when the collector
	// holds every distinct event. Otherwise a loss is an error.
	lossy bool
}

// peerRun runs one client process and checks that the collector received its events.
func (b *bench) peerRun(ctx context.Context, pc peerCase) (peerRun, error) {
	client, self, peersBin, events, s, round := pc.client, pc.self, pc.peersBin, pc.events, pc.sink, pc.round
	var cmd *exec.Cmd
	var agent *agentProc
	st0 := s.Stats()
	before := st0.Events
	switch client {
	case peerPosthog:
		cmd = exec.CommandContext(ctx, peersBin, "-client", "posthog", "-events", events, "-endpoint", s.url)
	case peerSegment:
		cmd = exec.CommandContext(ctx, peersBin, "-client", "segment", "-events", events, "-endpoint", s.url+"/v1/batch")
	case peerViaAgent:
		dir := b.dir(fmt.Sprintf("peer-agent-%d", round))
		defer b.drop(dir)
		var err error
		agent, err = startAgent(agentSpec{bin: b.opt.bin, dataDir: dir, endpoint: s.url + "/v1/batch",
			env: b.agentEnv(), logPath: filepath.Join(b.root, "peer-agent.log")})
		if err != nil {
			return peerRun{}, err
		}
		defer agent.kill()
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := agent.waitReady(rctx); err != nil {
			return peerRun{}, err
		}
		cmd = exec.CommandContext(ctx, peersBin, "-client", "segment", "-events", events, "-endpoint", agent.url+"/v1/batch")
	default:
		dir := b.dir(fmt.Sprintf("peer-%s-%d", client, round))
		defer b.drop(dir)
		cmd = exec.CommandContext(ctx, self, "-child", client, "-child-events", events,
			"-child-endpoint", s.url+"/v1/batch", "-child-dir", dir)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return peerRun{}, err
	}
	if err := cmd.Start(); err != nil {
		return peerRun{}, err
	}
	sc := bufio.NewScanner(out)
	var meter cpuMeter
	var start time.Time
	var last string
	for sc.Scan() {
		if line := sc.Text(); line == "START" {
			start = time.Now()
			if agent != nil {
				meter = startCPU(agent.pid())
			}
		} else {
			last = line
		}
	}
	if err := cmd.Wait(); err != nil {
		return peerRun{}, fmt.Errorf("%s: %w: %s", client, err, strings.TrimSpace(stderr.String()))
	}
	var r peerRun
	if err := json.Unmarshal([]byte(last), &r.childResult); err != nil {
		return r, fmt.Errorf("%s printed %q: %w", client, last, err)
	}
	if r.Failed > 0 && !pc.lossy {
		return r, fmt.Errorf("%s: posthog-go failed to send %d events", client, r.Failed)
	}
	// posthog-go has sent all it ever will once its Close returned; the others lose nothing,
	// and the agent may still be uploading.
	if !pc.lossy || client != peerPosthog {
		want := before + r.Events
		held := func(st sink.Stats) bool { return st.Events >= want }
		if pc.lossy {
			held = func(st sink.Stats) bool { return st.Unique-st0.Unique >= r.Events }
		}
		wctx, cancel := context.WithTimeout(ctx, b.opt.drainLimit)
		defer cancel()
		if err := s.Wait(wctx, held); err != nil {
			return r, fmt.Errorf("%s: the collector got %d of %d events: %w", client, s.Stats().Events-before, r.Events, err)
		}
	}
	st := s.Stats()
	r.delivered, r.unique, r.requests = st.Events-before, st.Unique-st0.Unique, st.Requests-st0.Requests
	if agent != nil {
		// Through the agent the span ends when the collector holds every event.
		r.ElapsedNS = time.Since(start).Nanoseconds()
		use := meter.stop()
		if !use.ok {
			return r, errors.New("agent CPU not readable from /proc")
		}
		r.agentCPU = use.agent
		if _, _, err := agent.terminate(b.opt.shutdownTimeout + 10*time.Second); err != nil {
			return r, err
		}
	}
	return r, nil
}

// writeEvents writes events 0..n-1 of gen, one per line.
func writeEvents(path string, gen payloadFunc, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		_, _ = w.Write(gen(i))
		_ = w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
