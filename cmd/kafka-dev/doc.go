// Command kafka-dev runs a local Kafka-protocol cluster for trying outbox's Kafka destination
// with no Kafka install and no Docker: it starts franz-go's in-process cluster (kfake) on
// loopback, a consumer that prints every record that arrives, and, with -agent, an outbox
// agent configured for it through OUTBOX_* variables. `make run-kafka` runs it.
//
// It is a development tool: the cluster keeps records in memory and forgets them at exit. It
// is a separate binary so that the product binary, bin/outbox, does not link kfake.
//
//	go run ./cmd/kafka-dev -agent bin/outbox
//	curl -d '{"type":"track","event":"Hello","userId":"u1"}' http://127.0.0.1:8089/v1/track
package main
