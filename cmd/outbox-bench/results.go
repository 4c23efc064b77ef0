package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Targets.
const (
	targetIngest  = 0.60     // agent ingest / bbolt ceiling
	targetE2E     = 70_000.0 // events/s end to end
	targetRSS     = 64 << 20 // peak RssAnon with N queued, bytes
	targetRestart = time.Second
	targetSIGTERM = time.Second // past shutdown.timeout
)

// rows turns the results into the table, in the order of docs/BENCHMARKS.md.
func (b *bench) rows() []row {
	var rs []row
	rs = append(rs, b.peerRows()...)
	rs = append(rs, b.ceilingRows()...)
	rs = append(rs, b.ingestRows()...)
	rs = append(rs, b.drainRows()...)
	rs = append(rs, b.encryptRows()...)
	rs = append(rs, b.faultPeerRows()...)
	rs = append(rs, b.outageRows()...)
	rs = append(rs, b.e2eRows()...)
	rs = append(rs, b.agentRows()...)
	rs = append(rs, b.kafkaRows()...)
	rs = append(rs, b.sourcesRows()...)
	return rs
}

// errRow is the row of a measurement that failed or was not run.
func (b *bench) errRow(name, step string) row {
	if err, ok := b.errs[step]; ok {
		return row{name: name, result: "error", verdict: "error", detail: err.Error()}
	}
	return row{name: name, result: "not run"}
}

// ratioTo formats v/ref when ref is known.
func ratioTo(v, ref float64) (string, string) {
	if ref <= 0 {
		return "not run", ""
	}
	return rate(ref), pct(v / ref)
}

func (b *bench) ceilingRows() []row {
	if b.bolt == 0 {
		return []row{b.errRow("raw bbolt ceiling", "ceiling")}
	}
	return []row{{
		name: "raw bbolt ceiling", result: rate(b.bolt), ref: "(ceiling)", ratio: "100%",
		detail: fmt.Sprintf("raw bbolt ceiling: %s values of 500 bytes, 1000 per fsync'd write tx, increasing KSUID keys, FillPercent 1.0.",
			thousands(int64(b.opt.ceilingEvents))),
	}}
}

func (b *bench) ingestRows() []row {
	var rs []row
	name := fmt.Sprintf("agent ingest, POST /v1/batch %d×%d", b.opt.clients, b.opt.perRequest)
	if h := b.hold; h != nil {
		ref, ratio := ratioTo(h.ingest.rate(), b.bolt)
		rs = append(rs, row{
			name: name, result: rate(h.ingest.rate()), ref: ref, ratio: ratio,
			target: "≥ 60% of bbolt", verdict: verdictIf(b.bolt > 0, h.ingest.rate() >= targetIngest*b.bolt),
			detail: fmt.Sprintf("agent ingest: the bin/outbox subprocess, %s events of about 545 bytes in %s requests from %d clients "+
				"(bodies built before the clock starts, messageIds patched per request), queue.sync always, into an empty data directory; the collector answers 429 Retry-After: 300, so the worker "+
				"sleeps and does not compete (the end-to-end row measures ingest while draining). %s",
				thousands(int64(h.ingest.events)), thousands(int64(h.ingest.requests)), b.opt.clients,
				h.cpu.perEvent(h.ingest.events, h.ingest.elapsed, "agent", "load generator (the bench process)")),
		})
	} else {
		rs = append(rs, b.errRow(name, "hold"))
	}
	for _, g := range []int{1, 8, 64} {
		name := fmt.Sprintf("library Enqueue, %d goroutine(s)", g)
		r, ok := b.enq[g]
		if !ok {
			if err, bad := b.enqueueErrs[g]; bad {
				rs = append(rs, row{name: name, result: "error", verdict: "error", detail: err.Error()})
			} else {
				rs = append(rs, row{name: name, result: "not run"})
			}
			continue
		}
		ref, ratio := ratioTo(r.rate(), b.bolt)
		rs = append(rs, row{
			name: name, result: rate(r.rate()), ref: ref, ratio: ratio,
			detail: fmt.Sprintf("library Enqueue (%d): uploader.Client.Enqueue, one 545-byte event per call, queue.sync always, "+
				"for %s: %s events, %.1f events per commit (group commit); worker paused by 429 Retry-After: 300.",
				g, r.elapsed.Round(time.Millisecond), thousands(r.events), r.perCommit()),
		})
	}
	return rs
}

func (b *bench) drainRows() []row {
	var rs []row
	name := fmt.Sprintf("drain %s queued, gzip (agent)", short(b.opt.events))
	if r := b.restart; r != nil {
		rs = append(rs, row{name: name, result: rate(r.rate()),
			detail: fmt.Sprintf("drain: the agent restarted on %s queued events, defaults (500-event batches, gzip, acks fsync'd), "+
				"to a loopback pkg/sink; first batch at the sink → the sink holds all %s distinct messageIds: %s (%d duplicates).",
				thousands(int64(b.opt.events)), thousands(r.unique), secs(r.drain), r.dups)})
	} else {
		rs = append(rs, b.errRow(name, "restart"))
	}
	name = fmt.Sprintf("drain %s under faults", short(b.opt.faultEvents))
	if f := b.faults; f != nil {
		rs = append(rs, row{name: name, result: rate(f.rate()),
			target: "0 lost", verdict: verdict(f.lost() == 0 && f.dead == 0),
			detail: fmt.Sprintf("faults: uploader.Client with defaults draining %s queued events; the sink answers 20%% 503 and "+
				"5%% 429 + Retry-After: 1 (seed %d): %s requests refused, %d rate-limit waits (%s), %d backoff waits (%s), "+
				"%s in all; lost %d, dead-lettered %d, duplicates %d. The figure is bound by those real waits, not by CPU.",
				thousands(int64(f.events)), b.opt.seed, thousands(f.rejected), f.retries["rate_limit"],
				f.waited["rate_limit"].Round(time.Millisecond), f.retries["backoff"], f.waited["backoff"].Round(time.Millisecond),
				secs(f.elapsed), f.lost(), f.dead, f.duplicates)})
	} else {
		rs = append(rs, b.errRow(name, "faults"))
	}
	return rs
}

func (b *bench) e2eRows() []row {
	var rs []row
	ceiling := b.bolt
	ref := "not run"
	if ceiling > 0 {
		ref = rate(ceiling) + " (bbolt)"
	}
	name := fmt.Sprintf("end to end, library, %d producers", b.opt.producers)
	if r := b.e2eLib; r != nil {
		rs = append(rs, row{name: name, result: rate(r.rate()), ref: ref, ratio: pctIf(r.rate(), ceiling),
			target: "≥ 70,000 ev/s", verdict: verdict(r.rate() >= targetE2E),
			detail: fmt.Sprintf("end to end (library): %d goroutines call uploader.Client.Enqueue with %d event(s) of about 545 bytes "+
				"each (queue.sync always) while its worker drains to a loopback sink with gzip; first Enqueue → the sink holds "+
				"all %s distinct: %s (producers done after %s; %d duplicates). The reference is the raw bbolt ceiling.",
				b.opt.producers, b.opt.perCall, thousands(r.unique), secs(r.elapsed), secs(r.enqueued), r.duplicates)})
	} else {
		rs = append(rs, b.errRow(name, "e2e-lib"))
	}
	name = fmt.Sprintf("end to end, agent, POST %d×%d", b.opt.clients, b.opt.perRequest)
	if r := b.e2eAg; r != nil {
		v := float64(r.unique) / r.elapsed.Seconds()
		rs = append(rs, row{name: name, result: rate(v), ref: ref, ratio: pctIf(v, ceiling),
			target: "≥ 70,000 ev/s", verdict: verdict(v >= targetE2E),
			detail: fmt.Sprintf("end to end (agent): %d clients POST %d events per request to the bin/outbox subprocess while it "+
				"drains to a loopback sink with gzip; first request → the sink holds all %s distinct: %s; ingest alone took %s "+
				"(%s while draining); peak RssAnon %s. %s",
				b.opt.clients, b.opt.perRequest, thousands(r.unique), secs(r.elapsed), secs(r.ingest.elapsed), rate(r.ingest.rate()),
				mib(r.peak.RssAnon), r.cpu.perEvent(int(r.unique), r.elapsed,
					"agent (ingest + drain)", "load generator + loopback sink (the bench process)"))})
	} else {
		rs = append(rs, b.errRow(name, "e2e-agent"))
	}
	return rs
}

func (b *bench) agentRows() []row {
	var rs []row
	limitRSS := mib(targetRSS)
	name := fmt.Sprintf("agent peak RssAnon, %s queued", short(b.opt.events))
	if h := b.hold; h != nil {
		peak := max(h.peakIngest.RssAnon, h.peakHold.RssAnon)
		rs = append(rs, row{name: name, result: mib(peak), ref: limitRSS, ratio: pct(float64(peak) / targetRSS),
			target: "≤ 64 MiB", verdict: verdict(peak <= targetRSS),
			detail: fmt.Sprintf("memory with N queued: /proc/PID/status every 50 ms; RssAnon peak %s while ingesting, %s while holding "+
				"%s events for %s (VmRSS peak %s, RssFile peak %s: bbolt's mapped pages are page cache).",
				mib(h.peakIngest.RssAnon), mib(h.peakHold.RssAnon), thousands(h.queued), b.opt.hold,
				mib(max(h.peakIngest.VmRSS, h.peakHold.VmRSS)), mib(max(h.peakIngest.RssFile, h.peakHold.RssFile)))})
	} else {
		rs = append(rs, b.errRow(name, "hold"))
	}
	name = "agent peak RssAnon, draining"
	if r := b.restart; r != nil {
		rs = append(rs, row{name: name, result: mib(r.peakDrain.RssAnon), ref: limitRSS,
			ratio: pct(float64(r.peakDrain.RssAnon) / targetRSS), target: "≤ 64 MiB", verdict: verdict(r.peakDrain.RssAnon <= targetRSS),
			detail: fmt.Sprintf("memory while draining: from the restart to the last event at the sink (VmRSS peak %s, RssFile peak %s).",
				mib(r.peakDrain.VmRSS), mib(r.peakDrain.RssFile))})
	} else {
		rs = append(rs, b.errRow(name, "restart"))
	}
	name = fmt.Sprintf("restart to ready, %s queued", short(b.opt.events))
	if r := b.restart; r != nil {
		rs = append(rs, row{name: name, result: secs(r.ready), ref: secs(targetRestart), ratio: pct(r.ready.Seconds() / targetRestart.Seconds()),
			target: "≤ 1 s", verdict: verdict(r.ready <= targetRestart),
			detail: "restart: from starting the process to the first 200 from GET /readyz (polled every 5 ms)."})
	} else {
		rs = append(rs, b.errRow(name, "restart"))
	}
	name = "SIGTERM to exit, in 300 s Retry-After"
	if h := b.hold; h != nil {
		limit := b.opt.shutdownTimeout + targetSIGTERM
		rs = append(rs, row{name: name, result: secs(h.sigterm), ref: fmt.Sprintf("%s + 1 s", b.opt.shutdownTimeout),
			ratio: pct(h.sigterm.Seconds() / limit.Seconds()), target: "≤ timeout + 1 s",
			verdict: verdict(h.sigterm <= limit && h.sigtermCode == 0),
			detail: fmt.Sprintf("SIGTERM: sent while the worker waits out 429 Retry-After: 300 with %s events queued; exit code %d; "+
				"the limit is shutdown.timeout (%s) + 1 s.", thousands(h.queued), h.sigtermCode, b.opt.shutdownTimeout)})
	} else {
		rs = append(rs, b.errRow(name, "hold"))
	}
	name = "file size after full drain"
	if r := b.restart; r != nil {
		limit := 2*r.liveBytes + 1<<20
		rs = append(rs, row{name: name, result: mib(r.fileBytes), ref: mib(limit) + " (2×live+1)",
			ratio: pct(float64(r.fileBytes) / float64(limit)), target: "≤ 2×live + 1 MiB", verdict: verdict(r.fileBytes <= limit),
			detail: fmt.Sprintf("file: outbox.db on disk once the queue is empty (live data %s), given up to 5 s for the store to compact.",
				mib(r.liveBytes))})
	} else {
		rs = append(rs, b.errRow(name, "restart"))
	}
	return rs
}

// verdictIf is the verdict when the comparison could be made, else "".
func verdictIf(known, ok bool) string {
	if !known {
		return ""
	}
	return verdict(ok)
}

// pctIf is v/ref as a percentage when ref is known.
func pctIf(v, ref float64) string {
	if ref <= 0 {
		return ""
	}
	return pct(v / ref)
}

// short writes an event count as 1M, 100k or the number.
func short(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	default:
		return thousands(int64(n))
	}
}

// eachRate is every element's f, formatted as a rate and in order: the rounds a median was
// taken of.
func eachRate[T any](xs []T, f func(T) float64) string {
	each := make([]string, len(xs))
	for i, x := range xs {
		each[i] = rate(f(x))
	}
	return strings.Join(each, ", ")
}

// medianBy returns the element of xs whose f is the median (the lower middle for an even
// count), so that a row can show the median run's other figures too; xs must not be empty.
func medianBy[T any](xs []T, f func(T) float64) T {
	sorted := slices.Clone(xs)
	slices.SortStableFunc(sorted, func(a, b T) int { return cmp.Compare(f(a), f(b)) })
	return sorted[(len(sorted)-1)/2]
}
