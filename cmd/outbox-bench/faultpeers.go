package main

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Collector scripts of the side-by-side runs under faults, in outbox sink --fail syntax (the
// seed is added by the run).
const (
	delaySpec       = "200:delay=50ms:default" // every answer 50 ms later: a collector across a WAN
	only503Spec     = "503:20%"                // 20% 503 without Retry-After: the counted path
	only503Chance   = 0.2                      // only503Spec's chance of a 503 per request
	faultMixSpec    = "503:20%,429:5%:ra=1"    // and 5% 429 + Retry-After: 1: the rate-limit path too
	outageSpec      = "503:default"            // every request 503: a total outage
	targetDelay     = 0.9                      // events/s at 50 ms ÷ posthog-go's at 50 ms
	targetOnly503   = 0.6                      // events/s under 20% 503 ÷ the same client's on a local collector
	targetFaultRate = 8_000.0                  // events/s delivered under faultMixSpec
)

// faultCase is one collector script of the side-by-side runs: base is one of the specs
// above ("" answers 200 at once), spec the same with the run's seed where it draws chances.
type faultCase struct{ name, base, spec string }

func (b *bench) faultCases() []faultCase {
	seeded := func(spec string) string { return fmt.Sprintf("%s,seed=%d", spec, b.opt.seed) }
	return []faultCase{
		{"local collector", "", ""},
		{"collector 50 ms away", delaySpec, delaySpec},
		{"20% 503", only503Spec, seeded(only503Spec)},
		{"20% 503 + 5% 429", faultMixSpec, seeded(faultMixSpec)},
	}
}

// faultClients are the clients of the side-by-side runs: posthog-go, outbox EnqueueAsync
// from one goroutine, and the HTTP batch client through the agent.
func faultClients() []string { return []string{peerPosthog, peerAsync, peerViaAgent} }

// delayRounds is how many times each client runs against the collector 50 ms away, the
// clients taking turns round by round. Each run lasts about 4 s, and with the client, the
// agent and the collector on two cores one run of any client moves by ±15 % from the next:
// the row is each client's median run, so its ratio to posthog-go compares middles, not one
// draw of each.
const delayRounds = 3

// faultPeerResults are the side-by-side runs, by case name and client, in the order run.
type faultPeerResults struct {
	runs map[string]map[string][]peerRun
	errs map[string]map[string]error
	n    int
}

// run is the client's median run of the case (by delivered rate); false when the client has
// no run of it or one of its rounds failed.
func (p *faultPeerResults) run(caseName, client string) (peerRun, bool) {
	rs := p.runs[caseName][client]
	if len(rs) == 0 || p.errs[caseName][client] != nil {
		return peerRun{}, false
	}
	return medianBy(rs, peerRun.deliveredRate), true
}

// rounds is how many times each client runs against the case's collector.
func (fc faultCase) rounds() int {
	if fc.base == delaySpec {
		return delayRounds
	}
	return 1
}

// runFaultPeers runs each client once per collector script (fc.rounds() times, in turns with
// the other clients, against the one 50 ms away), on -fault-peer-events events, each run
// against a collector of its own (so its distinct messageIds are the run's).
func (b *bench) runFaultPeers(ctx context.Context) {
	p := &faultPeerResults{runs: map[string]map[string][]peerRun{}, errs: map[string]map[string]error{}, n: b.opt.faultPeerEvents}
	b.faultPeers = p
	tools, err := b.peerTools(ctx, "fault-peer-events.jsonl", p.n)
	if err != nil {
		b.fail("faultpeers", err)
		return
	}
	for _, fc := range b.faultCases() {
		p.runs[fc.name], p.errs[fc.name] = map[string][]peerRun{}, map[string]error{}
		for round := range fc.rounds() {
			for _, client := range faultClients() {
				if ctx.Err() != nil {
					return
				}
				if p.errs[fc.name][client] != nil {
					continue
				}
				b.progress("fault peers: %s, %s, %s events (round %d of %d)", fc.name, client, thousands(int64(p.n)), round+1, fc.rounds())
				r, err := b.faultPeerRun(ctx, tools, fc, client)
				if err != nil {
					b.failed++
					p.errs[fc.name][client] = err
					b.progress("fault peers %s, %s failed: %v", fc.name, client, err)
					continue
				}
				p.runs[fc.name][client] = append(p.runs[fc.name][client], r)
			}
		}
	}
}

func (b *bench) faultPeerRun(ctx context.Context, tools peerTools, fc faultCase, client string) (peerRun, error) {
	s, err := startPeerSink(fc.spec, 0) // every record: the sustained span is read from them
	if err != nil {
		return peerRun{}, err
	}
	defer s.Close()
	pc := tools.run(client, s, 0)
	pc.lossy = true
	r, err := b.peerRun(ctx, pc)
	r.sustained = sustainedSpan(s.Requests(), r.Events*sustainedShare/100)
	return r, err
}

// sustainedShare is the percentage of the events the sustained span covers.
const sustainedShare = 90

// sustainedSpan is the time from the first request to the one whose acceptance brought the
// accepted events to want (0 when they never did). A drain's last batches wait out their own
// backoffs with nothing else left to send, so the end of a short drain measures the unluckiest
// batch's backoff (0.5 s, then 1 s, then 2 s by default) more than the rate of delivery.
func sustainedSpan(reqs []sink.Request, want int64) time.Duration {
	if len(reqs) == 0 || want <= 0 {
		return 0
	}
	var got int64
	for _, r := range reqs {
		if r.Outcome != sink.OutcomeAccepted {
			continue
		}
		if got += int64(r.EventCount); got >= want {
			return r.Time.Sub(reqs[0].Time)
		}
	}
	return 0
}

// sustainedRate is the rate over the sustained span; 0 when it is unknown.
func (r peerRun) sustainedRate() float64 {
	if r.sustained <= 0 {
		return 0
	}
	return float64(r.Events*sustainedShare/100) / r.sustained.Seconds()
}

// delivered is the rate of distinct events the collector accepted over the client's span.
func (r peerRun) deliveredRate() float64 { return float64(r.unique) / (float64(r.ElapsedNS) / 1e9) }

// lost is what the client was given and the collector never accepted.
func (r peerRun) lost() int64 { return r.Events - r.unique }

var faultClientNames = map[string]string{
	peerPosthog:  "posthog-go, 1 goroutine",
	peerAsync:    "outbox EnqueueAsync, 1 goroutine",
	peerViaAgent: "HTTP batch client → agent",
}

// faultPeerRows are the side-by-side rows: one per collector script and client, with what
// each is held to (outbox only; posthog-go is the reference of the 50 ms rows).
func (b *bench) faultPeerRows() []row {
	p := b.faultPeers
	if p == nil {
		return []row{b.errRow("clients under faults", "faultpeers")}
	}
	var rs []row
	for _, fc := range b.faultCases() {
		for _, client := range faultClients() {
			name := fc.name + ": " + faultClientNames[client]
			r, ok := p.run(fc.name, client)
			if !ok {
				if err := p.errs[fc.name][client]; err != nil {
					rs = append(rs, row{name: name, result: "error", verdict: "error", detail: err.Error()})
				} else {
					rs = append(rs, row{name: name, result: "not run"})
				}
				continue
			}
			rs = append(rs, b.faultPeerRow(name, fc, client, r))
		}
	}
	return rs
}

func (b *bench) faultPeerRow(name string, fc faultCase, client string, r peerRun) row {
	p := b.faultPeers
	v := r.deliveredRate()
	rw := row{name: name, result: rate(v)}
	outbox := client != peerPosthog
	script := "answering at once"
	if fc.spec != "" {
		script = fmt.Sprintf("scripted %q", fc.spec)
	}
	lost := fmt.Sprintf("lost %s of %s", thousands(r.lost()), thousands(r.Events))
	if r.Failed > 0 {
		lost += fmt.Sprintf(" (posthog-go reported giving up on %s)", thousands(r.Failed))
	}
	rw.detail = fmt.Sprintf("%s: %s events to a collector of its own %s: %s distinct delivered in %s, %s; %s batch requests, "+
		"%s accepted events with duplicates.", name, thousands(r.Events), script, thousands(r.unique),
		secs(time.Duration(r.ElapsedNS)), lost, thousands(r.requests), thousands(r.delivered))
	if rs := p.runs[fc.name][client]; len(rs) > 1 {
		rw.detail += fmt.Sprintf(" The median of %d rounds (%s, in the order run).", len(rs), eachRate(rs, peerRun.deliveredRate))
	}
	local, okLocal := p.run(b.faultCases()[0].name, client)
	if sr := r.sustainedRate(); sr > 0 {
		rw.detail += fmt.Sprintf(" The first %d%% were accepted %s after the first request: %s sustained.", sustainedShare, secs(r.sustained), rate(sr))
		if okLocal && fc.base != "" && local.sustainedRate() > 0 {
			rw.detail += fmt.Sprintf(" Sustained, %s of the local run's.", times(sr/local.sustainedRate()))
		}
	}
	switch fc.base {
	case "":
		rw.ref = "(reference)"
	case delaySpec:
		if ph, ok := p.run(fc.name, peerPosthog); ok && outbox {
			ref := ph.deliveredRate()
			rw.ref, rw.ratio = rate(ref)+" (posthog-go)", times(v/ref)
			rw.target, rw.verdict = fmt.Sprintf("≥ %.1f× posthog-go", targetDelay), verdict(v >= targetDelay*ref && r.lost() == 0)
		}
	default:
		if okLocal {
			ref := local.deliveredRate()
			rw.ref, rw.ratio = rate(ref)+" (local)", times(v/ref)
		}
		if !outbox {
			break
		}
		if fc.base == only503Spec {
			rw.target = fmt.Sprintf("≥ %.1f× local, 0 lost", targetOnly503)
			rw.verdict = verdictIf(okLocal, okLocal && v >= targetOnly503*local.deliveredRate() && r.lost() == 0)
			if okLocal && local.deliveredRate() > 0 {
				batches := int((r.Events + uploader.DefaultBatchMaxEvents - 1) / uploader.DefaultBatchMaxEvents)
				span := time.Duration(float64(r.Events) / local.deliveredRate() * float64(time.Second))
				best := backoffTail{batches: batches, span: span, p: only503Chance, draws: 1000, seed: b.opt.seed}.ratio()
				rw.detail += fmt.Sprintf(" Sending its %s batches at its local rate with no pause but each failed batch's own counted "+
					"backoff, a client would read %s of that rate here (the median of 1,000 drawn runs): over a run this short "+
					"the unluckiest batch's backoff decides the span.", thousands(int64(batches)), times(best))
			}
		} else {
			rw.target, rw.verdict = "≥ 8,000 ev/s, 0 lost", verdict(v >= targetFaultRate && r.lost() == 0)
		}
	}
	return rw
}
