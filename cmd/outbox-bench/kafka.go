package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/twmb/franz-go/pkg/kfake"
)

// kafkaBrokers and kafkaPartitions shape the in-process cluster of the Kafka drain.
const kafkaBrokers, kafkaPartitions = 3, 6

// kafkaResult is what the Kafka drain measured.
type kafkaResult struct {
	events   int
	acked    int64 // events in batches every record of which the cluster acknowledged
	dead     int64
	requests int64 // attempts (Send calls)
	elapsed  time.Duration
}

func (r kafkaResult) rate() float64 { return float64(r.acked) / r.elapsed.Seconds() }

// runKafka drains N queued events into an in-process Kafka-protocol cluster.
func (b *bench) runKafka(ctx context.Context) {
	d := b.dir("kafka")
	defer b.drop(d)
	n := b.opt.events
	b.progress("kafka: fill %s events, drain them into an in-process %d-broker cluster (kfake; idempotent, acks=all, snappy)",
		thousands(int64(n)), kafkaBrokers)
	if err := fillQueue(d, b.gen, 0, n); err != nil {
		b.fail("kafka", err)
		return
	}
	r, err := drainKafka(ctx, d, n, b.opt.drainLimit)
	if err != nil {
		b.fail("kafka", err)
		return
	}
	b.kafka = &r
}

// drainKafka opens an uploader.Client with the Kafka destination (defaults: 500-event
// batches, messageId keys, snappy) on a queue already holding n events, and measures the time
// from the first acknowledged batch until the cluster has acknowledged all n. The cluster
// discards record bytes once it has checked and acknowledged them (kfake.BlackholeProduce),
// so the figure is the client's: a real cluster runs on other machines.
func drainKafka(ctx context.Context, dir string, n int, limit time.Duration) (kafkaResult, error) {
	res := kafkaResult{events: n}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(kafkaBrokers), kfake.SeedTopics(kafkaPartitions, "events"), kfake.BlackholeProduce())
	if err != nil {
		return res, fmt.Errorf("kafka: start kfake: %w", err)
	}
	defer cluster.Close()
	dest, err := kafka.New(kafka.Config{Brokers: cluster.ListenAddrs(), Topic: "events"})
	if err != nil {
		return res, err
	}
	var (
		mu    sync.Mutex
		first time.Time
		all   = make(chan time.Time, 1)
		acked int64
	)
	c, err := openClient(dir, "http://127.0.0.1:1/unused", uploader.WithDestination(dest), uploader.WithHooks(uploader.Hooks{
		OnDelivered: func(bi uploader.BatchInfo) {
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() {
				first = time.Now()
			}
			if acked += int64(bi.Events); acked >= int64(n) {
				select {
				case all <- time.Now():
				default:
				}
			}
		},
	}))
	if err != nil {
		_ = dest.Close()
		return res, err
	}
	defer closeClient(c)
	var done time.Time
	select {
	case done = <-all:
	case <-time.After(limit):
	case <-ctx.Done():
	}
	st := c.Stats()
	mu.Lock()
	res.acked, res.elapsed = acked, done.Sub(first)
	mu.Unlock()
	res.dead, res.requests = st.Counters.EventsDead, st.Counters.Requests
	if done.IsZero() {
		return res, fmt.Errorf("kafka: the cluster acknowledged %d of %d events in %s (dead %d)", res.acked, n, limit, res.dead)
	}
	return res, nil
}

// kafkaRows is the Kafka drain's row; its reference is the HTTP drain of the same run.
func (b *bench) kafkaRows() []row {
	name := fmt.Sprintf("drain %s queued, Kafka (library)", short(b.opt.events))
	r := b.kafka
	if r == nil {
		return []row{b.errRow(name, "kafka")}
	}
	ref, ratio := "", ""
	if h := b.restart; h != nil {
		http := h.rate()
		ref, ratio = "HTTP drain "+rate(http), pct(r.rate()/http)
	}
	lost := int64(r.events) - r.acked - r.dead
	return []row{{name: name, result: rate(r.rate()), ref: ref, ratio: ratio, target: "0 lost", verdict: verdict(lost == 0 && r.dead == 0),
		detail: strings.Join([]string{
			fmt.Sprintf("Kafka drain: uploader.Client with the pkg/kafka destination (franz-go, idempotent, acks=all, snappy, messageId keys, 500-event batches) draining %s queued events into an in-process %d-broker kfake cluster, %d partitions, on loopback.",
				thousands(int64(r.events)), kafkaBrokers, kafkaPartitions),
			fmt.Sprintf("First acknowledged batch → every event acknowledged: %s, %s attempts; lost %d, dead-lettered %d.",
				secs(r.elapsed), thousands(r.requests), lost, r.dead),
			"The cluster checks and acknowledges every record batch (CRC, idempotent sequence numbers) and then discards it, so the figure is the client side's; the broker shares the 2 cores with it.",
		}, " ")}}
}
