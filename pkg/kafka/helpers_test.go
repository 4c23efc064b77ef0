package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topic is the topic the test clusters are seeded with (3 partitions).
const topic = "events"

// startCluster starts an in-process Kafka-protocol cluster on loopback, closed at cleanup.
func startCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, topic)}, opts...)...)
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// newDest builds a destination on the cluster's brokers with cfg's other fields.
func newDest(t testing.TB, c *kfake.Cluster, cfg kafka.Config, opts ...kafka.Option) *kafka.Destination {
	t.Helper()
	cfg.Brokers = c.ListenAddrs()
	if cfg.Topic == "" {
		cfg.Topic = topic
	}
	d, err := kafka.New(cfg, opts...)
	if err != nil {
		t.Fatalf("kafka.New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// trackEvents returns n stored-event-like JSON objects with messageIds prefix-0.., written
// with spacing and an escape so that a re-encoding would show.
func trackEvents(prefix string, n int) ([][]byte, []string) {
	evs := make([][]byte, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		evs[i] = fmt.Appendf(nil, `{"type":"track", "event":"Tested \u00e9","userId":"user-%d","anonymousId":"anon-%d",`+
			`"properties":{"i":%d,"nested":{"messageId":"not-this-one"}},"messageId":%q}`, i%7, i, i, ids[i])
	}
	return evs, ids
}

// send sends evs through d with a bounded context.
func send(t testing.TB, d delivery.Destination, evs [][]byte) delivery.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return d.Send(ctx, delivery.Batch{Events: evs})
}

// consumed is one record read back.
type consumed struct {
	key, value []byte
	partition  int32
}

// consumeAll reads topic from the start until want distinct values arrived (or 15 s), and
// returns every record read, duplicates included.
func consumeAll(t testing.TB, c *kfake.Cluster, topic string, want int) []consumed {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []consumed
	seen := map[string]bool{}
	for len(seen) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d distinct records before the timeout", len(seen), want)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, consumed{key: r.Key, value: r.Value, partition: r.Partition})
			seen[string(r.Value)] = true
		})
	}
	return out
}

// mustClass fails unless o has the class want.
func mustClass(t testing.TB, o delivery.Outcome, want delivery.Class) {
	t.Helper()
	if o.Class != want {
		t.Fatalf("outcome %s (code %q, net %q, err %v, detail %q), want %s", o.Class, o.Code, o.NetError, o.Err, o.Detail, want)
	}
}
