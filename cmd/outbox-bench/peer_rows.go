package main

import (
	"fmt"
	"slices"
	"time"
)

// Targets of the peer comparison: ratios to posthog-go measured in the same run.
const (
	targetAsyncRate    = 1.2                   // EnqueueAsync events/s ÷ posthog-go's
	targetAsyncCPU     = 0.8                   // EnqueueAsync CPU per event ÷ posthog-go's, at most
	targetEnqueue64    = 0.8                   // Enqueue from 64 goroutines events/s ÷ the same run's 64-put bbolt ceiling
	targetAgentAddsCPU = 10 * time.Microsecond // the agent's CPU per relayed event
)

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Nanoseconds())/1e6) }

// ceilingCommit is the time of one commit of the 64-put ceiling that made rate events/s.
func ceilingCommit(rate float64) time.Duration { return time.Duration(64 / rate * 1e9) }

// us formats a duration in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1e3) }

// times formats a ratio as "1.23×".
func times(r float64) string { return fmt.Sprintf("%.2f×", r) }

// peerRows are the side-by-side rows: each client's events/s and CPU per event, outbox's as
// ratios to posthog-go's.
func (b *bench) peerRows() []row {
	p := b.peers
	if p == nil {
		return []row{b.errRow("peers: posthog-go, 1 goroutine", "peers")}
	}
	rateOf := func(r peerRun) float64 { return r.rate() }
	cpuOf := func(r peerRun) float64 { return float64(r.cpuPerEvent()) }
	refRate, okRate := p.median(peerPosthog, rateOf)
	refCPU, _ := p.median(peerPosthog, cpuOf)
	rounds := fmt.Sprintf("median of %d round(s), %s events each", b.opt.peerRounds, thousands(int64(p.n)))
	if b.opt.peerFaults != "" {
		rounds += fmt.Sprintf("; every client's collector answers as scripted by %q", b.opt.peerFaults)
	}
	var rs []row
	missing := func(name, client string) row {
		if err := p.errs[client]; err != nil {
			return row{name: name, result: "error", verdict: "error", detail: err.Error()}
		}
		return row{name: name, result: "not run"}
	}
	name := "posthog-go, 1 goroutine (peer)"
	if okRate {
		rs = append(rs, row{name: name + ": events/s", result: rate(refRate), ref: "(peer)", ratio: "1.00×",
			detail: fmt.Sprintf("posthog-go v1.5.2 (bench/peers, its own process): Enqueue of a Capture per event from one goroutine "+
				"(properties and context as built by the app), then Close, which sends what it holds; defaults (250-event batches, "+
				"no gzip); the span ends when Close returns. %s; CPU is the process's user+sys (getrusage) over the span.", rounds)})
		rs = append(rs, row{name: name + ": CPU per event", result: us(time.Duration(refCPU)), ref: "(peer)", ratio: "1.00×"})
	} else {
		rs = append(rs, missing(name, peerPosthog))
	}
	cmp := func(client, name, detail string, rateTarget, cpuTarget float64) {
		v, ok := p.median(client, rateOf)
		if !ok {
			rs = append(rs, missing(name, client))
			return
		}
		c, _ := p.median(client, cpuOf)
		r := row{name: name + ": events/s", result: rate(v), detail: detail}
		cr := row{name: name + ": CPU per event", result: us(time.Duration(c))}
		if okRate {
			r.ref, r.ratio = rate(refRate), times(v/refRate)
			cr.ref, cr.ratio = us(time.Duration(refCPU)), times(c/refCPU)
			if rateTarget > 0 {
				r.target, r.verdict = fmt.Sprintf("≥ %.1f× posthog-go", rateTarget), verdict(v >= rateTarget*refRate)
			}
			if cpuTarget > 0 {
				cr.target, cr.verdict = fmt.Sprintf("≤ %.1f× posthog-go", cpuTarget), verdict(c <= cpuTarget*refCPU)
			}
		}
		rs = append(rs, r, cr)
	}
	cmp(peerAsync, "outbox EnqueueAsync, 1 goroutine",
		fmt.Sprintf("outbox EnqueueAsync (its own process): one event per call from one goroutine, the app's map[string]any "+
			"(built before the clock, as posthog-go's Captures are) serialised by outbox, queue.sync always, gzip, 500-event "+
			"batches, then Flush (every done called, the queue uploaded and acknowledged); %s.%s", rounds, b.commitNote(peerAsync)),
		targetAsyncRate, targetAsyncCPU)
	cmp(peerAsyncRaw, "outbox EnqueueAsync, 1 goroutine, app-marshalled",
		fmt.Sprintf("the same, but the app json.Marshal's each event (a struct with property maps) on the measured path and "+
			"passes the bytes, which outbox parses again: the serialisation is done twice; %s.%s", rounds, b.commitNote(peerAsyncRaw)),
		0, 0)
	cmp(peerEnqueue, "outbox Enqueue, 64 goroutines",
		fmt.Sprintf("outbox Enqueue (its own process): 64 goroutines, one event per call (the app's map, as above), each durable "+
			"on return, queue.sync always, gzip, while the worker drains; then Flush; %s.%s", rounds, b.commitNote(peerEnqueue)),
		0, 0)
	rs = append(rs, b.ceiling64Row())
	cmp(peerSegment, "HTTP batch client → collector",
		fmt.Sprintf("a plain HTTP batch client doing what analytics-go v3 does (analytics-go is not on the module proxy here): "+
			"json.Marshal per event, 250-event batches POSTed to /v1/batch by 4 background senders, no gzip; %s.", rounds), 0, 0)
	rs = append(rs, b.agentAddsRow())
	return rs
}

// enqueuedEventBytes is the size of one stored event of the peer comparison (a normalised
// track event of the bench's templates), the value size of the Enqueue ×64 ceiling.
const enqueuedEventBytes = 535

// ceiling64Row is Enqueue ×64 against its ceiling measured in the same rounds: raw bbolt
// committing 64 puts per fsync'd transaction, back to back, on the same disk. 64 callers that
// each wait for their commit cannot beat one commit per group of all of them.
func (b *bench) ceiling64Row() row {
	p := b.peers
	name := "outbox Enqueue, 64 goroutines ÷ bbolt 64 puts per fsync'd tx"
	v, ok := p.median(peerEnqueue, func(r peerRun) float64 { return r.rate() })
	if !ok || len(p.ceiling64) == 0 {
		return row{name: name, result: "not run"}
	}
	c := slices.Clone(p.ceiling64)
	slices.Sort(c)
	ceil := c[(len(c)-1)/2]
	commit, _ := p.median(peerEnqueue, func(r peerRun) float64 { return float64(r.commitTime()) })
	busy, _ := p.median(peerEnqueue, func(r peerRun) float64 { return r.busy() })
	return row{name: name, result: rate(v), ref: rate(ceil), ratio: times(v / ceil),
		target: fmt.Sprintf("≥ %.1f× ceiling", targetEnqueue64), verdict: verdict(v >= targetEnqueue64*ceil),
		detail: fmt.Sprintf("the ceiling: raw bbolt committing 64 puts of %d bytes per fsync'd write tx in a loop (the store's "+
			"bolt.Options, increasing KSUID keys), %s puts, measured right after each round's Enqueue ×64 on the same disk; "+
			"median of %d round(s). Row 7's commits took %s each (the ceiling's: %s) and kept the writer busy %.0f%% of its "+
			"intake; the rest is the callers' own time between an answer and their next call (waking, serialising the next "+
			"event), while the disk is idle.", enqueuedEventBytes, thousands(int64(p.n)), len(c),
			ms(time.Duration(commit)), ms(ceilingCommit(ceil)), 100*busy)}
}

// commitNote gives the mean events per commit of an outbox client's runs.
func (b *bench) commitNote(client string) string {
	v, ok := b.peers.median(client, func(r peerRun) float64 { return float64(r.Events) / float64(max(r.Commits, 1)) })
	if !ok {
		return ""
	}
	return fmt.Sprintf(" Events per store commit (intake and acks): %.0f.", v)
}

// agentAddsRow is the agent run: the same HTTP batch client → agent → collector, with the
// agent's own CPU per relayed event.
func (b *bench) agentAddsRow() row {
	p := b.peers
	name := "HTTP batch client → agent → collector"
	v, ok := p.median(peerViaAgent, func(r peerRun) float64 { return r.rate() })
	if !ok {
		if err := p.errs[peerViaAgent]; err != nil {
			return row{name: name, result: "error", verdict: "error", detail: err.Error()}
		}
		return row{name: name, result: "not run"}
	}
	agentCPU, _ := p.median(peerViaAgent, func(r peerRun) float64 { return float64(r.agentCPU) / float64(max(r.Events, 1)) })
	clientVia, _ := p.median(peerViaAgent, func(r peerRun) float64 { return float64(r.cpuPerEvent()) })
	clientDirect, _ := p.median(peerSegment, func(r peerRun) float64 { return float64(r.cpuPerEvent()) })
	direct, _ := p.median(peerSegment, func(r peerRun) float64 { return r.rate() })
	ref := "not run"
	ratio := ""
	if direct > 0 {
		ref, ratio = rate(direct)+" (direct)", times(v/direct)
	}
	return row{name: name + ": agent CPU per event", result: us(time.Duration(agentCPU)), ref: us(targetAgentAddsCPU),
		ratio: pctIf(agentCPU, float64(targetAgentAddsCPU)), target: "≤ 10 µs", verdict: verdict(time.Duration(agentCPU) <= targetAgentAddsCPU),
		detail: fmt.Sprintf("the HTTP batch client above sending to the bin/outbox agent (its own process; queue.sync always, gzip "+
			"to the collector), span from the first event to the collector holding all of them: %s (direct to the collector: %s, %s). "+
			"The agent's CPU (/proc/PID/stat, 10 ms ticks) per relayed event is what it adds; the client's own CPU per event: "+
			"%s through the agent, %s direct.", rate(v), ref, ratio, us(time.Duration(clientVia)), us(time.Duration(clientDirect)))}
}
