package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// The several-sources row: one agent in relay mode (the README's DaemonSet: each app's SDK
// sends its own write key, and each key is a source of its own) serving 8 senders, one of
// which sends 90 % of the events as a backlog of N queued events, the other 7 sending the
// remaining 10 % live while that backlog drains. Held to: the small senders' events reach the
// collector within 2 × batch.interval (p99, enqueue → arrival, from a send time in each
// event); the 8 sources deliver at ≥ 0.9× the rate of the same events through one source
// (the same backlog, the small senders' events sent with the big sender's key, the same
// agent configuration); the agent spends ≤ 10 µs of CPU per event, ingest and drain.
//
// In each run the backlog is queued through the agent's HTTP ingest while the collector
// answers 429 Retry-After: 1, so the agent's CPU covers the ingest and the drain of every
// event, with no restart in between.
//
// The live senders are paced by the drain, not by the clock: a sender's k-th request of K
// leaves once 5 % + 70 % × k/(K-1) of the backlog has reached the collector, so that every
// live event is sent while the backlog drains and both runs send the same load at the same
// points of it, whatever the machine's speed.

const (
	sourceSenders    = 8                      // sender 0 is the big one
	sourcesInterval  = 500 * time.Millisecond // batch.interval of both runs
	targetSourceRate = 0.9                    // 8 sources / 1 source, events/s
	targetAgentCPU   = 10 * time.Microsecond  // per event, ingest and drain
)

// sourcesPlan is the run's events: sender 0's backlog is events 0 … backlog-1, sender j ≥ 1
// sends backlog + (j-1)·perSmall … backlog + j·perSmall - 1 live.
type sourcesPlan struct {
	backlog, perSmall, perRequest int
	gen                           payloadFunc
}

// newSourcesPlan gives the backlog 90 % of the events and the 7 small senders the rest.
func newSourcesPlan(backlog, perRequest int, gen payloadFunc) sourcesPlan {
	small := sourceSenders - 1
	return sourcesPlan{backlog: backlog, perSmall: max((backlog/9+small-1)/small, 1), perRequest: perRequest, gen: gen}
}

func (p sourcesPlan) total() int { return p.backlog + (sourceSenders-1)*p.perSmall }

// sender is the sender of event id.
func (p sourcesPlan) sender(id int) int {
	if id < p.backlog {
		return 0
	}
	return 1 + (id-p.backlog)/p.perSmall
}

// senderKey is sender j's write key in the run with several sources.
func senderKey(j int) string { return "bench-source-" + strconv.Itoa(j) }

// sourcesRunResult is one run's figures.
type sourcesRunResult struct {
	fill     loadResult    // the backlog through the agent's ingest
	fillCPU  time.Duration // the agent's CPU from its start to the end of that ingest
	sink     sinkResult
	agentCPU time.Duration // the agent's CPU from its start to the last event at the collector
	events   int
}

func (r sourcesRunResult) rate() float64 { return float64(r.sink.unique) / r.sink.span.Seconds() }

// cpuPerEvent is the agent's CPU per event: the ingest and the drain of every event.
func (r sourcesRunResult) cpuPerEvent() time.Duration { return r.agentCPU / time.Duration(r.events) }

// sourcesResult is the row's figures.
type sourcesResult struct {
	plan    sourcesPlan
	one     sourcesRunResult
	several sourcesRunResult
}

func (b *bench) runSources(ctx context.Context) {
	if _, err := os.Stat(b.opt.bin); err != nil {
		b.fail("sources", fmt.Errorf("%s: %w (run `make build` or pass -outbox)", b.opt.bin, err))
		return
	}
	plan := newSourcesPlan(b.opt.events, b.opt.perRequest, b.gen)
	res := sourcesResult{plan: plan}
	b.progress("sources: 1 source: queue %s events under one write key (collector paused), then drain them while %d senders add %s with the same key",
		thousands(int64(plan.backlog)), sourceSenders-1, thousands(int64(plan.total()-plan.backlog)))
	var err error
	res.one, err = b.sourcesRun(ctx, plan, func(int) string { return senderKey(0) }, "sources-1")
	if err != nil {
		b.fail("sources", fmt.Errorf("1 source: %w", err))
		return
	}
	b.progress("sources: %d sources: the same, each sender with its own key", sourceSenders)
	res.several, err = b.sourcesRun(ctx, plan, func(id int) string { return senderKey(plan.sender(id)) }, "sources-8")
	if err != nil {
		b.fail("sources", fmt.Errorf("%d sources: %w", sourceSenders, err))
		return
	}
	b.sources = &res
}

// sourcesEnv is the agent's configuration in both runs: relay mode, the row's batch.interval.
func (b *bench) sourcesEnv() []string {
	return append(b.agentEnv(), "OUTBOX_SOURCES_RELAY=true", "OUTBOX_BATCH_INTERVAL="+sourcesInterval.String())
}

// sourcesRun starts the agent on an empty data directory against a checking collector that
// answers 429 Retry-After: 1, queues the backlog through POST /v1/batch under sender 0's key,
// then lets the collector accept and sends the small senders' events while the backlog
// drains, each request with keyOf of its events, until every event has arrived. The agent
// logs to agent-NAME.log; with -agent-profile its CPU profile goes to NAME.pprof.
func (b *bench) sourcesRun(ctx context.Context, plan sourcesPlan, keyOf func(id int) string, name string) (sourcesRunResult, error) {
	res := sourcesRunResult{events: plan.total()}
	dataDir := b.dir(name)
	defer b.drop(dataDir)
	s, err := startSourceSink(plan.total(), plan.backlog, keyOf)
	if err != nil {
		return res, err
	}
	defer s.close()
	env, pprofAddr := b.sourcesEnv(), ""
	if b.opt.agentProfile != "" {
		if pprofAddr, err = freeAddr(); err != nil {
			return res, err
		}
		env = append(env, "OUTBOX_DEBUG_PPROF_LISTEN="+pprofAddr)
	}
	p, err := startAgent(agentSpec{bin: b.opt.bin, dataDir: dataDir, endpoint: s.endpoint(), env: env,
		logPath: filepath.Join(b.root, "agent-"+name+".log")})
	if err != nil {
		return res, err
	}
	defer p.kill()
	rctx, cancel := context.WithTimeout(ctx, b.opt.drainLimit)
	defer cancel()
	if _, err = p.waitReady(rctx); err != nil {
		return res, err
	}
	res.fill, err = ingestLoad{url: p.url, gen: plan.gen, clients: b.opt.clients, perRequest: plan.perRequest,
		total: plan.backlog, writeKey: keyOf(0)}.run(rctx)
	if err != nil {
		return res, fmt.Errorf("queue the backlog: %w%s", err, p.logTail())
	}
	if res.fillCPU, err = cpuTime(p.pid()); err != nil {
		return res, err
	}
	var profiled <-chan struct{} // nil: not profiling
	if pprofAddr != "" {
		profiled = b.profileAgent(rctx, pprofAddr, filepath.Join(b.opt.agentProfile, name+".pprof"))
	}
	s.resume()
	lctx, stopSenders := context.WithCancel(rctx)
	defer stopSenders()
	var (
		wg      sync.WaitGroup
		once    sync.Once
		sendErr error
	)
	for j := 1; j < sourceSenders; j++ {
		first := plan.backlog + (j-1)*plan.perSmall
		wg.Go(func() {
			if err := plan.sendLive(lctx, p.url, keyOf(first), first, s); err != nil && lctx.Err() == nil {
				once.Do(func() { sendErr = fmt.Errorf("sender %d: %w", j, err); stopSenders() })
			}
		})
	}
	select {
	case <-s.done:
	case <-lctx.Done():
	}
	res.agentCPU, err = cpuTime(p.pid())
	stopSenders()
	wg.Wait()
	res.sink = s.result()
	switch {
	case sendErr != nil:
		return res, fmt.Errorf("%w%s", sendErr, p.logTail())
	case err != nil:
		return res, err
	case res.sink.unique < plan.total():
		return res, fmt.Errorf("the collector holds %d of %d events: %w%s", res.sink.unique, plan.total(), rctx.Err(), p.logTail())
	case res.sink.violations > 0:
		return res, fmt.Errorf("%d violation(s) of one source's key per upload, the first: %s", res.sink.violations, res.sink.violation)
	}
	if profiled != nil {
		<-profiled // the profile is lost if the agent stops first
	}
	_, _, err = p.terminate(b.opt.shutdownTimeout + 10*time.Second)
	return res, err
}

// profileAgent fetches a 60 s CPU profile (the whole run on 2 cores) from the agent's
// debug.pprof_listen into path, in the background; the channel is closed when it is done (a
// failure is logged, the row goes on).
func (b *bench) profileAgent(ctx context.Context, addr, path string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := func() error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/profile?seconds=60", nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("HTTP %d", res.StatusCode)
			}
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, res.Body); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}()
		if err != nil {
			b.progress("agent profile %s: %v", path, err)
		} else {
			b.progress("agent profile: %s", path)
		}
	}()
	return done
}

// sendLive sends the perSmall events from first, perRequest per request with key as the
// Basic auth username, each event stamped with its request's send time; the request k of K
// waits until 5 % + 70 % × k/(K-1) of the backlog has reached the collector.
func (p sourcesPlan) sendLive(ctx context.Context, url, key string, first int, s *sourceSink) error {
	bb, sentAt, err := newStampedBody(p.gen, first, p.perRequest)
	if err != nil {
		return err
	}
	tr := &http.Transport{MaxConnsPerHost: 1, WriteBufferSize: 64 << 10}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	nreq := (p.perSmall + p.perRequest - 1) / p.perRequest
	for k := range nreq {
		frac := 0.05
		if nreq > 1 {
			frac += 0.70 * float64(k) / float64(nreq-1)
		}
		for float64(s.backlogArrived()) < frac*float64(p.backlog) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
		n := min(p.perRequest, p.perSmall-k*p.perRequest)
		stamp := []byte(fmt.Sprintf("%0*d", sentDigits, time.Now().UnixNano()))
		for _, at := range sentAt[:n] {
			copy(bb.buf[at:at+sentDigits], stamp)
		}
		if err := postOnce(ctx, hc, url+"/v1/batch", key, bb.patch(first+k*p.perRequest, n)); err != nil {
			return fmt.Errorf("request %d: %w", k, err)
		}
	}
	return nil
}

// newStampedBody is newBatchBody of events that carry a bench_sent_ns property (19 zeros),
// with the offset of each event's stamp in the body.
func newStampedBody(gen payloadFunc, first, n int) (*batchBody, []int, error) {
	open := []byte(`"properties":{`)
	stamped := func(i int) []byte {
		ev := gen(i)
		at := bytes.Index(ev, open)
		if at < 0 {
			return ev
		}
		at += len(open)
		field := fmt.Sprintf(`%s%0*d",`, sentAtMark, sentDigits, 0)
		return append(append(append([]byte(nil), ev[:at]...), field...), ev[at:]...)
	}
	bb, err := newBatchBody(stamped, first, n)
	if err != nil {
		return nil, nil, err
	}
	var offs []int
	for at := 0; ; {
		i := bytes.Index(bb.buf[at:], sentAtMark)
		if i < 0 {
			break
		}
		at += i + len(sentAtMark)
		offs = append(offs, at)
	}
	if len(offs) != n {
		return nil, nil, fmt.Errorf("%d of %d events carry a send time (no properties object?)", len(offs), n)
	}
	return bb, offs, nil
}

// sourcesRows are the row's three figures and their targets.
func (b *bench) sourcesRows() []row {
	names := []string{
		fmt.Sprintf("%d sources, small sources' p99, %s backlog", sourceSenders, short(b.opt.events)),
		fmt.Sprintf("%d sources ÷ 1 source, events/s", sourceSenders),
		fmt.Sprintf("%d sources, agent CPU per event", sourceSenders),
	}
	r := b.sources
	if r == nil {
		return []row{b.errRow(names[0], "sources"), b.errRow(names[1], "sources"), b.errRow(names[2], "sources")}
	}
	limit := 2 * sourcesInterval
	sev, one := r.several, r.one
	p99 := quantile(sev.sink.latency, 0.99)
	cpu8, cpu1 := sev.cpuPerEvent(), one.cpuPerEvent()
	live := r.plan.total() - r.plan.backlog
	big, small := sev.sink.senderUploads(senderKey(0))
	return []row{{
		name: names[0], result: secs(p99), ref: fmt.Sprintf("%s (2 × %s)", secs(limit), sourcesInterval),
		ratio: pct(p99.Seconds() / limit.Seconds()), target: "≤ 2 × batch.interval", verdict: verdict(p99 <= limit),
		detail: fmt.Sprintf("several sources: the bin/outbox subprocess in relay mode (sources.relay, batch.interval %s, "+
			"otherwise the agent rows' configuration) on an empty data directory is sent %s events under one write key "+
			"through POST /v1/batch (%s) while the collector answers 429 Retry-After: 1; then the collector accepts, and "+
			"while that backlog drains %d other senders, each with its own key, send %s events (%s each, %d per request, "+
			"10%% of all), paced by the drain: a sender's k-th request of K leaves once 5%% + 70%% × k/(K-1) of the "+
			"backlog has arrived. Enqueue → arrival of those %s events, from a send time in each event's properties read "+
			"by the collector: p50 %s, p99 %s, max %s. The same events through one source (the backlog's key, same load, "+
			"same configuration) wait behind the backlog: p50 %s, p99 %s. The collector checked every upload: all %s "+
			"uploads of the %d sources carried exactly one write key and only that key's events (the big source %s "+
			"uploads of %.0f events on average, the small ones %s of %.1f); %d duplicates.",
			sourcesInterval, thousands(int64(r.plan.backlog)), rate(sev.fill.rate()), sourceSenders-1, thousands(int64(live)),
			thousands(int64(r.plan.perSmall)), r.plan.perRequest, thousands(int64(len(sev.sink.latency))),
			secs(quantile(sev.sink.latency, 0.5)), secs(p99), secs(quantile(sev.sink.latency, 1)),
			secs(quantile(one.sink.latency, 0.5)), secs(quantile(one.sink.latency, 0.99)),
			thousands(int64(big.uploads+small.uploads)), len(sev.sink.uploads),
			thousands(int64(big.uploads)), perUpload(big), thousands(int64(small.uploads)), perUpload(small), sev.sink.duplicates),
	}, {
		name: names[1], result: rate(sev.rate()), ref: rate(one.rate()) + " (1 source)",
		ratio: pct(sev.rate() / one.rate()), target: "≥ 90% of 1 source", verdict: verdict(sev.rate() >= targetSourceRate*one.rate()),
		detail: fmt.Sprintf("several sources, rate: all %s events (backlog and live), first accepted upload → the last "+
			"distinct event at the collector: %s with %d sources, %s through one.",
			thousands(int64(r.plan.total())), secs(sev.sink.span), sourceSenders, secs(one.sink.span)),
	}, {
		name: names[2], result: usPerEvent(cpu8), ref: usPerEvent(targetAgentCPU), ratio: pct(cpu8.Seconds() / targetAgentCPU.Seconds()),
		target: "≤ 10 µs", verdict: verdict(cpu8 <= targetAgentCPU),
		detail: fmt.Sprintf("several sources, CPU: the agent's utime+stime (/proc/PID/stat, 10 ms ticks) from its start to "+
			"the last event at the collector, %s (%s of it to the backlog's end: its ingest), per event of %s; through one "+
			"source %s (%s, %s).",
			sev.agentCPU.Round(time.Millisecond), sev.fillCPU.Round(time.Millisecond), thousands(int64(r.plan.total())),
			usPerEvent(cpu1), one.agentCPU.Round(time.Millisecond), one.fillCPU.Round(time.Millisecond)),
	}}
}

// senderUploads splits the uploads into those of key and those of every other key.
func (r sinkResult) senderUploads(key string) (keyUploads, keyUploads) {
	var other keyUploads
	for k, u := range r.uploads {
		if k != key {
			other.uploads += u.uploads
			other.events += u.events
		}
	}
	return r.uploads[key], other
}

func perUpload(u keyUploads) float64 {
	if u.uploads == 0 {
		return 0
	}
	return float64(u.events) / float64(u.uploads)
}

// usPerEvent formats a CPU time per event in µs.
func usPerEvent(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000)
}
