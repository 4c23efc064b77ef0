// Command outbox-bench is outbox's benchmark suite (`make bench`) and a load generator for
// sizing a deployment. It prints one Markdown table; docs/BENCHMARKS.md records the latest
// one and how to read it.
//
// # What runs
//
//	peers     outbox side by side with posthog-go v1.5.2, each client in its own process
//	          on the same -peer-events events to one loopback collector, -peer-rounds
//	          rounds (medians): posthog-go from one goroutine (bench/peers, its own Go
//	          module), outbox EnqueueAsync from one goroutine and Enqueue from 64
//	          goroutines (this binary re-run with -child), and a plain HTTP batch client
//	          doing what analytics-go does, to the collector and through the agent.
//	          Events/s and CPU per event (getrusage user+sys of the client process over its
//	          span; the agent's from /proc) as ratios to posthog-go's. After each round's
//	          Enqueue ×64, raw bbolt committing 64 puts of 535 bytes per fsync'd tx in a loop
//	          on the same disk: the ceiling of 64 callers that wait for their commits, which
//	          Enqueue ×64 is read against (-peer-clients enqueue64 runs only that pair)
//	ceiling   raw bbolt (1000 × 500-byte values per fsync'd tx, increasing KSUID keys,
//	          FillPercent 1.0)
//	enqueue   uploader.Client.Enqueue, one event per call, 1, 8 and 64 goroutines, for
//	          -enqueue-for each; the worker is parked by a collector answering
//	          429 Retry-After: 300
//	agent     the real binary (-outbox, default bin/outbox) as a subprocess:
//	            1. N events over POST /v1/batch (-clients × -per-request) into an empty data
//	               directory while the collector answers 429 Retry-After: 300 (ingest rate,
//	               peak RssAnon with N queued), then SIGTERM while the worker sits in that
//	               300 s wait (time to exit vs shutdown.timeout);
//	            2. a restart on the same directory against a live loopback sink with gzip:
//	               time to GET /readyz 200, the drain of all N, peak RssAnon while
//	               draining, the file size once drained (after the store's compaction)
//	encrypt   the agent's ingest and drain (1. and 2. above) three times without encryption
//	          at rest and with it (queue.encryption.key_files, AES-256-GCM), in turns: the
//	          medians with it against the medians without
//	faults    -fault-events queued events drained in process against 20% 503 and
//	          5% 429 + Retry-After: 1: events/s, retries and waits, events lost (distinct
//	          messageIds at the sink vs enqueued) — bound by the real waits
//	faultpeers posthog-go, outbox EnqueueAsync and the HTTP batch client through the agent,
//	          side by side, -fault-peer-events events per run and collector script (sink
//	          --fail syntax): answering at once, 200:delay=50ms:default (50 ms away),
//	          503:20% and 503:20%,429:5%:ra=1, each run against a collector of its own; one
//	          run each, but three rounds against the collector 50 ms away (the clients take
//	          turns; each row is its client's median run); distinct events delivered per
//	          second of the client's span, events lost (given to the client, never accepted),
//	          ratios to posthog-go (50 ms) or to the same client on the local collector (faults)
//	outage    -fault-events queued events drained in process with upload.concurrency auto,
//	          4 and 1 side by side; once a quarter are delivered the collector answers 503 to
//	          everything for -outage (real time), then 200: batch requests the client began
//	          during the outage, and of them those begun after it had a failed answer with
//	          no success after it (held to concurrency 1's + 1), time from its end until all
//	          are delivered, events lost
//	e2e       end to end, first enqueue → the sink holds all N distinct messageIds, gzip on,
//	          queue.sync always: through the library (-producers goroutines calling
//	          Enqueue) and through the agent (-clients × -per-request over HTTP)
//	sources   several sources on one agent, the bin/outbox subprocess in relay mode (each
//	          ingest write key its own source, as the README's DaemonSet runs it) with
//	          batch.interval 500ms: N events are sent under one write key through POST
//	          /v1/batch while the collector answers 429 Retry-After: 1; then the collector
//	          accepts, and while that backlog drains 7 other keys send N/9 events (10 % of
//	          all, 100 per request), paced by the drain (a sender's k-th request of K once
//	          5 % + 70 % × k/(K-1) of the backlog has arrived). The collector is the row's
//	          own (srcsink.go): it checks that every upload carries one write key and only
//	          that key's events, and measures each live event's enqueue → arrival from a
//	          send time in its properties: p99 vs 2 × batch.interval. The same run with
//	          every event under the backlog's key gives the one-source rate (8 sources ≥
//	          0.9× it); the agent's CPU per event (/proc, its whole life: the ingest and the
//	          drain of every event) ≤ 10 µs. -agent-profile DIR saves a CPU profile of each
//	          run's agent (60 s from the backlog's end)
//
// Every collector but the sources section's is a pkg/sink on 127.0.0.1 that keeps counters
// only. Events are Segment track events of about 545 bytes made from 1,000 templates (event
// name, page, properties, browser) filled with per-event values (user, ids, timestamp, prices),
// with distinct messageIds; 500 of them gzip (BestSpeed) about 6.9:1, like real analytics
// traffic. Memory is read from /proc/PID/status every 50 ms. The HTTP load builds one body per
// client before the clock starts and only rewrites its fixed-width messageIds ("msg-" and 12
// digits) per request, so that it leaves the shared cores to the agent; the footnotes of the
// agent ingest and end-to-end rows give the CPU per event of the agent and of the bench
// process. Progress goes to stderr, the table to stdout; the exit code is 1 when a measurement
// failed (a miss of a target is not a failure).
//
// Data directories go under -dir ($TMPDIR by default) and are removed after each step
// (-keep keeps them and the agent logs); the default N of 1,000,000 needs about 1.5 GB free.
// The full default run takes about 8 to 10 minutes on 2 cores (faultpeers, encrypt and outage
// add about four and a half of them, the outage's 30 s of real time and the backoff after it
// included; sources about one, and up to two on a loaded machine); -quick takes about a minute.
// The peers section builds bench/peers with the go command (-peers names its directory).
package main
