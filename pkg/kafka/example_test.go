package kafka_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Example embeds outbox delivering to Kafka: the destination is passed to uploader.Open, and
// everything else (the durable queue, Enqueue, Flush, Close) is as with the HTTP collector.
func Example() {
	// An in-process cluster stands in for your brokers.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "analytics-events"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	dir, err := os.MkdirTemp("", "outbox-kafka-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	dest, err := kafka.New(kafka.Config{Brokers: cluster.ListenAddrs(), Topic: "analytics-events"})
	if err != nil {
		log.Fatal(err) // every problem names its key: upload.kafka.brokers, upload.kafka.topic, …
	}
	cfg := uploader.DefaultConfig()
	cfg.DataDir = dir
	client, err := uploader.Open(cfg, uploader.WithDestination(dest)) // the client closes dest
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = client.Enqueue(ctx, map[string]any{"type": "track", "event": "Signed Up", "userId": "user-1", "messageId": "msg-1"})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Flush(ctx); err != nil { // every record acknowledged by the cluster
		log.Fatal(err)
	}
	if err := client.Close(ctx); err != nil {
		log.Fatal(err)
	}

	// What a consumer of the topic reads: the key is the messageId.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("analytics-events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		log.Fatal(err)
	}
	defer consumer.Close()
	consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { fmt.Printf("key %s\n", r.Key) })
	// Output: key msg-1
}
