// Package sink is a small Segment-compatible collector with scripted fault injection. It is
// the collector of outbox's tests and benchmarks (in process, on 127.0.0.1) and the server
// behind `outbox sink`.
//
// # Model
//
// A Server answers:
//
//	POST /v1/batch, POST /v1/import   a batch body {"batch":[...],"sentAt":...}, plain or
//	                                  Content-Encoding: gzip; optional Basic auth (write key
//	                                  as username, else 401)
//	GET  /stats                       the counters (Stats) as JSON
//	anything else                     recorded, then 404 (405 for a non-POST on a batch route)
//
// Every request except GET /stats is recorded as a Request: request line, headers (so
// X-Retry-Count can be checked), the batch's events as json.RawMessage with their messageIds,
// the response played and the Outcome. An accepted batch (answered 2xx) adds to the counters:
// batches, events, distinct messageIds and duplicate messageIds. Events are never unmarshalled:
// the body is split into events in one scan, and the top-level messageId of each is picked out
// on the way; unless Options.NoValidate the body is also checked to be valid JSON. The sink
// accepts whatever its script tells it to accept: it does not validate events.
//
// For each batch request the sink takes the next response from its Script before reading the
// body:
//
//	Steps (in order, one per request) → Chances (one seeded draw per request) → Default (200)
//
// then reads and decodes the body (malformed → 400, too large → 413, and no step is replayed),
// lets Options.Respond override the choice with the decoded request in hand (for example 400
// when the batch holds a marked bad event), and plays it: a status with optional Retry-After,
// Location, body and headers; a delay; a hang until the client gives up or the sink closes; or a
// connection reset (RST) before the body is read or after it was read. Counters are updated
// before the response is written, so a client that has its 200 sees the events counted.
//
// Options.Print, when set, gets each event of every accepted batch as one JSON line (`outbox
// sink --print`, `outbox run --dev --print`), so a developer sees what was delivered.
//
// Tests wait with WaitEvents / WaitRequests / Wait instead of polling, and read Requests,
// Accepted, Events, Stats, Deliveries. For long runs set Options.DiscardEvents (counters and a
// 64-bit hash per messageId are kept, bodies are not) and Options.MaxRequests.
//
// # Fault spec syntax
//
// ParseFaults turns the text of `outbox sink --fail` into a Script. A spec is a comma-separated
// list of items; each item is a response with optional colon-separated modifiers:
//
//	item      = "seed=" N | response [ "x" COUNT ] *( ":" modifier )
//	response  = STATUS (100-599) | "ok" (200) | "reset" | "reset-before-body"
//	          | "reset-after-body" | "hang"
//	modifier  = "x" COUNT        repeat the step COUNT times (same as the suffix form)
//	          | P "%"            a chance: played with probability P percent once the steps
//	                             are used up (instead of being a step)
//	          | "default"        the response after the steps (when no chance is drawn)
//	          | "ra=" VALUE      Retry-After sent raw: "1", "0", "-1", "soon"…
//	          | "ra=date+DUR"    Retry-After as an HTTP-date DUR after the moment it is played
//	          | "ra=date-DUR"    … or DUR before (a past date)
//	          | "delay=DUR"      wait DUR (Go duration) before answering
//	          | "loc=URL"        Location header; takes the rest of the item
//	          | "body=TEXT"      response body; takes the rest of the item
//
// Items without "%" or "default" are steps, played in order; "xN" repeats a step N times, as a
// suffix of the response ("429x5:ra=1") or as a modifier ("429:ra=1:x5").
// Probabilities must sum to at most 100%. Bodies and URLs cannot contain commas (use the Go
// API for those). Examples:
//
//	503x5,429:ra=1,reset-after-body,200      five 503s, a 429 with Retry-After: 1, a reset
//	                                         after the body, then 200 for ever
//	503:20%,429:5%:ra=1,seed=7               20% 503, 5% 429 + Retry-After: 1, else 200
//	500x3,503:ra=2:default                   three 500s, then 503 + Retry-After: 2 for ever
//	307:loc=http://127.0.0.1:9/v1/batch      one redirect, then 200
//	hang                                     the first request never gets an answer
package sink
