package kafka_test

import (
	"context"
	"testing"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
)

// BenchmarkSend measures one 500-event batch produced and acknowledged by an in-process
// 3-broker cluster that checks and then discards the records (the client's side of a drain;
// `make bench` has the whole drain through the worker).
func BenchmarkSend(b *testing.B) {
	c := startCluster(b, kfake.NumBrokers(3), kfake.SeedTopics(6, topic), kfake.BlackholeProduce())
	d := newDest(b, c, kafka.Config{})
	evs, _ := trackEvents("bench", 500)
	size := 0
	for _, ev := range evs {
		size += len(ev)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if o := d.Send(context.Background(), delivery.Batch{Events: evs}); o.Class != delivery.ClassSuccess {
			b.Fatalf("outcome %s: %v", o.Class, o.Err)
		}
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
}
