// Command e2e-cli is outbox's adapter for Segment's cross-SDK e2e suite (docs/E2E.md): a
// one-shot CLI that runs a described sequence of events through pkg/uploader against a
// collector and reports the outcome as one JSON line.
//
//	e2e-cli --input '<json>' [--timeout 5m] [--log-level info]
//
// The input is {"writeKey", "apiHost", "sequences", "config"}:
//
//	writeKey   required; sent as the Basic auth username
//	apiHost    base URL (no path); uploads go to apiHost + "/v1/batch"; absent → Segment's API
//	sequences  required list of {"delayMs", "events"}: sleep delayMs, then enqueue the events
//	           in order (each a Segment event object, validated and normalised by pkg/event)
//	config     optional: flushAt → batch.max_events, flushInterval (ms) → batch.interval,
//	           maxRetries → retry.max_retries, timeout (s) → upload.timeout. Absent (or 0 for
//	           flushAt, flushInterval and timeout, as in Segment's SDKs) keeps the default;
//	           maxRetries 0 means no retries.
//
// Unknown fields (cdnHost…) are ignored. The run uses a fresh temporary data directory (removed
// at exit), queue.sync none (nothing outlives the run) and upload.split_rejected false, so a
// rejected batch costs exactly one request, as with Segment's SDKs.
//
// # When it ends
//
// After the last sequence it flushes until every batch was delivered (2xx) or finally failed
// (dead-lettered: rejected, or a retry budget spent). Transient failures — a 5xx, a 429 with
// Retry-After, a network error that is retried and then succeeds — are waited out and do not
// count. --timeout (default 5m) bounds the whole run, sequence delays included: at the deadline
// the attempt in flight is cancelled and the run fails with the number of events not delivered.
// A retry wait that would end after the deadline is not waited out at all: the run fails at
// once, since the queue cannot empty in time. 5 minutes covers the default counted-backoff
// envelope (10 retries, 500 ms doubling to 60 s: about 4 minutes), so with defaults a failing
// collector yields its real verdict; a Retry-After near retry.retry_after_cap (300 s) does not
// fit and fails the run early. Pass a shorter --timeout when the harness has its own bound.
//
// # Output
//
// stdout carries exactly one line, {"success":bool,"sentBatches":N,"error"?:string}:
// sentBatches counts the batches the collector accepted (the uploader's OnDelivered hook);
// error joins every problem (refused events named by sequences[i].events[j], failed batches
// with the first reason, the deadline). Logs go to stderr (slog text; the write key is never
// logged). An event the uploader refuses does not stop the run — the other events are still
// delivered — but fails it.
//
// Exit codes: 0 success; 1 failed run or bad input (success false, the error naming the field,
// e.g. "bad input: config.flushAt: -1: must be at least 1"); 2 usage (no --input, an unknown
// flag), still with the JSON line on stdout. -h prints the flags and exits 0 without a line.
package main
