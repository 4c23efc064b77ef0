// Package httpdest is outbox's HTTP destination: it delivers one batch as one POST of the
// Segment batch body to a collector and classifies the answer. It is the default destination
// (segment.Open of pkg/segment builds it from the upload.* keys and the uploader's options
// WithHTTPClient, WithTransport, WithRequestHook and WithClassifier), and it is built only on the seam of
// pkg/delivery, as pkg/kafka is, so the worker and this package do not depend on each other's
// internals.
//
// # The body
//
// The body is {"batch":[e1,e2,…],"sentAt":"<RFC 3339 ms>"} with the stored event bytes spliced
// in (never re-encoded; AppendBody, EncodedSize), gzip-compressed when Config.Gzip. A batch's
// body is built once for its first attempt (Prepare, ahead of it, while the batch before is in
// flight); it is built again, with a new sentAt (collectors correct event timestamps with it),
// for a retry, which follows a wait, and when it waited more than a second to be sent.
//
// # The request
//
// Every attempt builds its request anew: Content-Type, Content-Encoding, Basic auth from the
// write key, User-Agent outbox/<version>, the extra headers, the RequestHook, and
// X-Retry-Count — absent on a batch's first attempt (Batch.Retry 0), then 1, 2, 3 … for every
// retry, rate-limited ones included. SetCredentials swaps the write key and the headers for
// the attempts that start after it (a live reload); an attempt in flight keeps what it read.
// Only 307 and 308 redirects are followed (same method and body, at most 3 hops, never from
// https to http); a 301, 302 or 303 is returned as is and rejected, because following it would
// send a body-less GET and lose the batch. A response's body is read up to 1 KiB (the
// Outcome's Detail, which a dead letter keeps) and drained up to 4 KiB more, so the connection
// is reused. The per-attempt timeout is the caller's context (the uploader's upload.timeout).
//
// # The answer
//
// Classify (replaceable with Config.Classify) puts each attempt in one delivery.Class: 2xx
// success; a retryable status (IsRetryableStatus) rate-limited with a usable Retry-After
// (ParseRetryAfter), else retryable; 413 too large; 401 and 403 auth refused; any other status
// rejected; a network error retryable, never_sent or maybe_sent (exact with a SendTrace, which
// every attempt uses). A RequestHook error (*HookError) or a request that cannot be built from
// the configuration (*delivery.ConfigError) is ClassAborted: nothing was sent, no budget is
// spent and the batch stays queued.
package httpdest
