// Package kafka delivers outbox batches into a Kafka topic: it is a delivery.Destination built
// on franz-go (kgo). One event is one record; its value is the stored event JSON as it is
// (never re-encoded), its key the event's messageId by default, so consumers can deduplicate.
// Every record carries the name of its event's source in the header outbox-source (SourceHeader:
// "default", a configured source's name, or a relay source's relay-<hash>, never a write key).
// A batch holds the events of one source; it goes to that source's own topic when Config.Topics
// names one (sources.<name>.topic), else to Config.Topic.
//
// The producer is idempotent with acks=all: the cluster acknowledges a record only once every
// in-sync replica has it, and a produce request that kgo repeats after a lost answer is not
// written twice. A batch is a success only when every one of its records is acknowledged;
// otherwise the whole batch stays queued and is produced again by the worker, so a record the
// cluster already had may arrive twice (at-least-once: deduplicate on the key).
//
// Each attempt ends in one delivery.Outcome, mapped onto the worker's two budgets:
//
//	every record acknowledged                          success
//	retriable Kafka error (kerr.IsRetriable), broker   retryable (counted backoff); NetError
//	unreachable, no answer within the attempt timeout  never_sent / maybe_sent for the network
//	the same while the cluster throttles us            rate-limited, waiting the throttle time
//	MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE           too large: the worker splits the batch
//	                                                   (a single event is dead-lettered)
//	SASL authentication failure, and authorization     auth refused, as an HTTP 401/403: our
//	(TOPIC_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_   credentials, not the batch; delivery
//	FAILED)                                            pauses with the batch queued, the head
//	                                                   batch is probed about once a minute, no
//	                                                   budget is spent (upload.on_auth_failure:
//	                                                   dead_letter dead-letters it instead)
//	other non-retriable errors                         rejected: dead-lettered with the error's
//	                                                   name (replayable)
//
// kgo retries a retriable error a few times inside one attempt (a leader election is over in
// a moment); past that the error reaches the worker, whose budgets decide. A produce still in
// flight when the attempt's context ends (upload.timeout, or Close's deadline) is abandoned:
// Send returns at once and the batch stays queued.
//
// The destination takes several batches at once (delivery.BoundedDestination): Send is safe
// for concurrent use, each call collecting its own records' answers, and one kgo client
// carries them all. MaxInFlight is the producer's limit of produce requests in flight per
// broker (5 for the idempotent producer): each batch spreads over the partitions, so that many
// batches keep every broker's pipeline full, and more would only wait in kgo's buffer. A
// broker answers per partition, so an error reaches the records it was about: kgo may put
// records of several batches into one partition's record batch, and they share its fate, but
// each batch is classified by its own records only. Close cuts every attempt in flight, and
// their batches stay queued.
//
// The package is separate from pkg/uploader, and built only on the seam of pkg/delivery, so
// that an application that does not deliver to Kafka does not link franz-go. Use it with
// uploader.WithDestination:
//
//	dest, err := kafka.New(kafka.Config{Brokers: []string{"kafka-1:9092"}, Topic: "events"})
//	if err != nil { ... }
//	client, err := uploader.Open(cfg, uploader.WithDestination(dest))
package kafka
