// Package event parses, validates and normalises Segment events on intake:
// the agent's ingest routes and the library's Enqueue both call it, so it is
// the hot path of outbox (the library's Enqueue and the agent's ingest).
//
// # Model
//
// An event stays bytes from intake to upload. Normalize and ParseBatch never
// decode an event into a map: one pass over the JSON validates it (strictly,
// as encoding/json's Valid does, with nesting limited to 512 levels) and
// records where the fields that matter start and end; the output is then the
// input with the missing pieces spliced in. Every field outbox does not
// know, and every byte of the ones it only reads, is kept as sent. Leading
// and trailing whitespace around the event is dropped.
//
// # Rules
//
//   - An event is a JSON object. type is one of track, identify, page,
//     screen, group, alias. On a typed route (/v1/track, Normalize with a
//     non-empty typ) the route's type is set, replacing a type the event
//     carries, as Segment's API does.
//   - userId (a string or number) or anonymousId (a string) is required;
//     alias needs previousId and userId, track needs a non-empty string
//     event, group needs groupId (string or number). null and "" count as
//     absent for every one of these.
//   - messageId: kept when it is a non-empty string; absent, null or "" gets
//     a new KSUID; any other kind is an error.
//   - timestamp: kept when it is an RFC 3339 string (time.RFC3339, fraction
//     allowed), an error when it is any other string or kind; absent, null
//     or "" gets the intake time in UTC with milliseconds
//     (2024-05-01T12:00:00.000Z). receivedAt is never set.
//   - context must be an object (or null); context.library is kept when
//     present (whatever its value, null included), else set to
//     Options.Library, inserted as the context's first member. integrations must be an object
//     (or null).
//   - A top-level key sent twice is an error (which value would a collector
//     keep?). Keys repeated inside nested objects are kept as sent.
//   - An event over Limits.MaxEventBytes after normalisation is an error that
//     matches ErrTooLarge.
//
// # Scrub and suppress
//
// Options.Scrub (scrub.go) removes, masks or hashes fields named by path (context.ip,
// traits.email) in the same pass: parse walks only the objects a rule reaches and records each
// edit, emit splices it, so an event is not decoded twice. Options.Suppress (ids.go) holds user
// ids whose events are left out after they are checked (ErrSuppressed, ParseBatchSuppressed).
// UserMatcher finds a user's stored events for forgetting them.
//
// # Go values
//
// An app that holds its events as Go values (a map[string]any shaped like
// Segment's JSON, typically) hands them to the library's Enqueue, which
// writes them with AppendJSON and then normalises the bytes: the value is
// serialised once, without encoding/json's reflection for the shapes events
// have, and checked by the same rules as bytes from the wire.
//
// # Batches
//
// ParseBatch reads {"batch":[…], "context"?, "integrations"?}; other
// top-level fields are checked to be JSON and ignored, and a top-level key
// sent twice is an error. A batch-level context or integrations object is
// merged key by key into each event's own (the event's keys win; the added
// members go first, as sent). A batch-level context.library counts as the
// event's when the event has none. A request is all or nothing: the first
// bad event gives an *Error with its 0-based Index and no event is
// returned. An empty batch is accepted and yields no events (Segment answers
// 200 to it).
//
// # Cost
//
// Normalize allocates once (the output). ParseBatch allocates per request,
// never per event: an event that needs no edit is returned as its bytes in
// the body, without being copied or compared, the events it changes share
// one buffer, and its working memory
// is reused from one call to the next. Decoding happens only for keys
// and values that hold backslash escapes. BenchmarkNormalize and
// BenchmarkParseBatch report events/s on 535-byte track events
// (eventtest.Track).
//
// The request size limit (DefaultMaxRequestBytes) is enforced by whoever
// reads the body, before decompressed bytes reach ParseBatch.
package event
