// Package agent is the daemon's HTTP surface: a Segment-compatible ingest API in front of
// one uploader.Client, the admin API that `outbox status|flush|dead` talk to, health probes
// and Prometheus metrics.
//
// # Routes
//
//	POST /v1/batch, /v1/import          Segment batch {"batch":[...],"context"?,"integrations"?}
//	POST /v1/track|identify|page|...    one event; its type comes from the path
//	GET  /                              the status page (page.html, embedded; charts drawn by its script)
//	GET  /v1/status                     Status as JSON
//	GET  /v1/samples[?since=<unix ms>]  the page's history (PageSamples): per-second samples, last hour
//	POST /v1/flush[?wait=30s]           upload now; with wait, answer when done (FlushResult)
//	GET  /v1/dead[?source=&since=&until=&status=&reason=], /v1/dead/{id}
//	                                    dead-letter batches, those a filter matches (dead.go)
//	POST /v1/dead/replay, /v1/dead/purge  {"ids":[...]}, {"all":true} or a filter, in the body
//	                                    ({"reason":"rejected","since":"2h"}) or the query
//	POST /v1/forget                     {"user_ids":[...],"anonymous_ids":[...],"suppress"?,"unsuppress"?}:
//	                                    delete those users' queued and dead-lettered events (ForgetResult)
//	GET  /healthz, /readyz, /metrics    open: probes and scrapers
//
// The ingest routes (the first two lines) require a credential when one is configured: one of
// Config.WriteKeys as the Basic auth username (what Segment SDKs send) or Config.Token as
// "Authorization: Bearer". A /v1/batch or /v1/import request with no Authorization header may
// carry the write key as the body's top-level writeKey instead (analytics-node 2.x does): the
// body is read and checked before anything is parsed or stored, with at most maxPreAuthBodies
// such bodies read at once, each within preAuthReadTimeout. A header credential is checked
// before the body is read. Refusals are counted (outbox_ingest_auth_refused_total) and logged
// at warn at most once a second, naming the key by a hash. Credentials are compared in
// constant time and never logged. The listener serves at most Config.MaxConnections
// connections at once (conn_limit.go).
//
// The admin routes (the status page, /v1/samples, /v1/status, /v1/flush, /v1/dead*,
// /v1/forget) never
// accept ingest credentials; the admin gate (admin_auth.go) asks for Config.Admin.Token, or a
// verified client certificate under mTLS, or else a loopback peer under a loopback Host, and
// refuses cross-site and non-JSON requests on the routes that change state. Every admin action
// is logged (audit.go). A route is made an admin route by registering it with routes.go's
// admin helper: one line, and the check comes with it.
//
// # Intake contract
//
// An ingest request is answered 200 {"success":true} only after uploader.EnqueueNormalized
// returned, that is after its events are committed (and fsynced with queue.sync: always).
// Before that:
//
//	body over limits.max_request_bytes  → 413 (measured after gzip decompression, read with
//	                                       a bound on both the raw and the decompressed
//	                                       stream, so a gzip bomb costs at most the limit;
//	                                       a Content-Length over the limit is refused at
//	                                       once, before the body is read)
//	bad JSON or a bad event             → 400 {"error":"...","index":N}; nothing is stored
//	queue full (reject), store failing,
//	or shutdown begun                   → 503 with Retry-After: 1
//	body not arrived within its deadline → 408
//	missing or wrong credential         → 401
//
// Every time in a JSON answer (status, flush, dead letters) is RFC 3339 in UTC with exactly
// three fractional digits, "2025-01-02T03:04:05.600Z" (TimeLayout).
//
// # Status page
//
// New starts a sampler that reads the client's Stats (and, from the metrics, the upload
// attempts by code and the ingest requests refused with 400, 413 or 503) once a second on
// Config.Clock into a fixed ring of one hour: 3600 rows of a few int64 columns, about 390 KiB,
// allocated once. Level columns (queue events) are stored as
// read, counter columns (events uploaded, failed attempts) as the change since the previous
// sample, so the page draws rates directly. The page polls /v1/status and /v1/samples and
// loads /v1/dead when the dead-letter counts change; with several sources it lists the rows of
// /v1/status's sources, showing a column only when the rows carry its field. Its
// Content-Security-Policy allows only
// its inline script and style and requests to the agent itself.
//
// # Lifecycle
//
// Build order: NewMetrics, then uploader.Open with WithHooks(metrics.Hooks()), then New.
// Shutdown stops intake first (ingest 503, /readyz 503), lets in-flight ingest requests
// finish, closes the client (its last bounded upload pass) and finally stops the HTTP server;
// /v1/status and /metrics answer until then. /readyz is about intake only: a collector outage
// does not make the agent unready, since buffering through it is the agent's job.
//
// # Reload
//
// The process that runs the agent reloads its configuration on SIGHUP (outbox run): it hands
// the new ingest credentials and the write key → source mapping to Reconfigure (atomic swaps;
// each request is checked and routed with the set current when it arrives), re-reads the TLS files with ReloadTLS, and reports the
// outcome to RecordReload, which counts it in outbox_config_reloads_total{result} and shows the
// last one as Status.Reload and on the status page (reload.go).
package agent
