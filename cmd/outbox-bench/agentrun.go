package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/sink"
)

// agentEnv is the configuration every agent subprocess gets on top of its defaults.
func (b *bench) agentEnv() []string {
	return append([]string{
		"OUTBOX_QUEUE_SYNC=always",
		fmt.Sprintf("OUTBOX_QUEUE_MAX_BYTES=%d", max(int64(b.opt.events)*2000, 1<<30)),
		"OUTBOX_SHUTDOWN_TIMEOUT=" + b.opt.shutdownTimeout.String(),
	}, b.extraEnv...)
}

// startAgentWithSink starts a loopback sink playing script and the agent on dataDir uploading
// to it, logging to logName under the bench root. The caller closes the sink and kills the agent.
func (b *bench) startAgentWithSink(script sink.Script, dataDir, logName string) (*benchSink, *agentProc, error) {
	s, err := startSink(script)
	if err != nil {
		return nil, nil, err
	}
	p, err := startAgent(agentSpec{bin: b.opt.bin, dataDir: dataDir, endpoint: s.endpoint(),
		env: b.agentEnv(), logPath: filepath.Join(b.root, logName)})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, p, nil
}

// holdResult is what the agent measured with the collector paused.
type holdResult struct {
	ingest      loadResult
	cpu         cpuUse // agent and load generator, over the ingest
	peakIngest  memory // while ingesting
	peakHold    memory // holding every event afterwards
	sigterm     time.Duration
	sigtermCode int
	queued      int64
}

// agentHold starts the agent on an empty data directory against a collector that answers
// 429 Retry-After: 300, sends it n events through POST /v1/batch (the ingest figure: the
// worker sleeps in its rate-limit wait meanwhile), holds them for hold while sampling its
// memory, and sends SIGTERM while the worker still sits in that 300 s wait.
func (b *bench) agentHold(ctx context.Context, dataDir string, hold time.Duration) (holdResult, error) {
	var res holdResult
	s, p, err := b.startAgentWithSink(pausedScript(), dataDir, "agent-hold.log")
	if err != nil {
		return res, err
	}
	defer s.Close()
	defer p.kill()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := p.waitReady(rctx); err != nil {
		return res, err
	}
	mem := startSampler(p.pid(), 50*time.Millisecond)
	defer mem.Stop()
	cpu := startCPU(p.pid())
	res.ingest, err = ingestLoad{url: p.url, gen: b.gen, clients: b.opt.clients, perRequest: b.opt.perRequest, total: b.opt.events}.run(ctx)
	res.cpu = cpu.stop()
	if err != nil {
		return res, fmt.Errorf("agent ingest: %w%s", err, p.logTail())
	}
	res.peakIngest, _ = mem.window()
	st, err := p.waitStatus(rctx, func(st agent.Status) bool { return st.Retry.Path == "rate_limit" })
	if err != nil {
		return res, fmt.Errorf("worker not in its Retry-After wait: %w", err)
	}
	res.queued = st.Queue.Events
	select {
	case <-time.After(hold):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.peakHold, _ = mem.window()
	if st, err := p.status(rctx); err != nil || st.Retry.Path != "rate_limit" {
		return res, fmt.Errorf("worker left its Retry-After wait before SIGTERM (status %+v, %v)", st.Retry, err)
	}
	res.sigterm, res.sigtermCode, err = p.terminate(b.opt.shutdownTimeout + 10*time.Second)
	return res, err
}

// restartResult is what the agent measured restarting on a full queue and draining it.
type restartResult struct {
	ready     time.Duration // process start → GET /readyz 200
	drain     time.Duration // first batch at the sink → the sink holds every event
	unique    int64
	dups      int64
	peakDrain memory
	fileBytes int64 // outbox.db after the drain (and the compaction it triggers)
	liveBytes int64 // queued + dead event bytes after the drain
	exit      time.Duration
}

// rate is the drain's distinct events per second (0 when it was not timed).
func (r restartResult) rate() float64 {
	if r.drain <= 0 {
		return 0
	}
	return float64(r.unique) / r.drain.Seconds()
}

// agentRestartDrain starts the agent on dataDir (holding n events) against a live loopback
// sink with gzip: it measures the time to ready, the drain of all n events, the memory while
// draining and the file size once drained, then stops the agent with SIGTERM.
func (b *bench) agentRestartDrain(ctx context.Context, dataDir string, n int) (restartResult, error) {
	var res restartResult
	s, p, err := b.startAgentWithSink(sink.Script{}, dataDir, "agent-drain.log")
	if err != nil {
		return res, err
	}
	defer s.Close()
	defer p.kill()
	mem := startSampler(p.pid(), 50*time.Millisecond)
	defer mem.Stop()
	rctx, cancel := context.WithTimeout(ctx, b.opt.drainLimit)
	defer cancel()
	if res.ready, err = p.waitReady(rctx); err != nil {
		return res, err
	}
	err = s.Wait(rctx, func(st sink.Stats) bool { return st.Unique >= int64(n) })
	res.drain = time.Since(s.firstAt())
	st := s.Stats()
	res.unique, res.dups = st.Unique, st.Duplicates
	res.peakDrain, _ = mem.window()
	if err != nil {
		return res, fmt.Errorf("agent drain: sink holds %d of %d events: %w%s", st.Unique, n, err, p.logTail())
	}
	res.fileBytes, res.liveBytes, err = b.settledFile(rctx, p, filepath.Join(dataDir, "outbox.db"))
	if err != nil {
		return res, err
	}
	res.exit, _, err = p.terminate(b.opt.shutdownTimeout + 10*time.Second)
	return res, err
}

// settledFile waits until the agent's queue is empty, then gives the store up to 5 s to
// compact, and returns the file size on disk and the live bytes (queued + dead).
func (b *bench) settledFile(ctx context.Context, p *agentProc, path string) (int64, int64, error) {
	st, err := p.waitStatus(ctx, func(st agent.Status) bool { return st.Queue.Events == 0 })
	if err != nil {
		return 0, 0, err
	}
	live := st.Queue.Bytes + st.Dead.Bytes
	limit := 2*live + 1<<20
	var size int64
	for end := time.Now().Add(5 * time.Second); ; {
		fi, err := os.Stat(path)
		if err != nil {
			return 0, 0, fmt.Errorf("file size: %w", err)
		}
		size = fi.Size()
		if size <= limit || time.Now().After(end) {
			return size, live, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// e2eAgentResult is what the end-to-end run through the agent measured.
type e2eAgentResult struct {
	ingest  loadResult
	elapsed time.Duration // first request → the sink holds every event
	cpu     cpuUse        // agent and this process (load generator + sink), over elapsed
	unique  int64
	peak    memory
}

// e2eAgent starts the agent on an empty data directory against a live loopback sink, sends
// it n events through POST /v1/batch while it drains, and measures from the first request
// until the sink holds all n distinct messageIds.
func (b *bench) e2eAgent(ctx context.Context, dataDir string, n int) (e2eAgentResult, error) {
	var res e2eAgentResult
	s, p, err := b.startAgentWithSink(sink.Script{}, dataDir, "agent-e2e.log")
	if err != nil {
		return res, err
	}
	defer s.Close()
	defer p.kill()
	rctx, cancel := context.WithTimeout(ctx, b.opt.drainLimit)
	defer cancel()
	if _, err := p.waitReady(rctx); err != nil {
		return res, err
	}
	mem := startSampler(p.pid(), 50*time.Millisecond)
	defer mem.Stop()
	cpu := startCPU(p.pid())
	start := time.Now()
	res.ingest, err = ingestLoad{url: p.url, gen: b.gen, clients: b.opt.clients, perRequest: b.opt.perRequest, total: n}.run(rctx)
	if err != nil {
		return res, fmt.Errorf("agent ingest: %w%s", err, p.logTail())
	}
	err = s.Wait(rctx, func(st sink.Stats) bool { return st.Unique >= int64(n) })
	res.elapsed = time.Since(start)
	res.cpu = cpu.stop()
	res.unique = s.Stats().Unique
	res.peak, _ = mem.window()
	if err != nil {
		return res, fmt.Errorf("end to end (agent): sink holds %d of %d: %w%s", res.unique, n, err, p.logTail())
	}
	_, _, err = p.terminate(b.opt.shutdownTimeout + 10*time.Second)
	return res, err
}
