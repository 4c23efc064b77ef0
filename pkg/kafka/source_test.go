package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
)

// sourceRecord is one record read back: its topic, its source header(s) and its value.
type sourceRecord struct {
	topic   string
	sources []string // the values of every outbox-source header
	value   string
}

// consumeTopics reads topics from the start until want records arrived (or 15 s).
func consumeTopics(t testing.TB, c *kfake.Cluster, want int, topics ...string) []sourceRecord {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []sourceRecord
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the timeout", len(out), want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := sourceRecord{topic: r.Topic, value: string(r.Value)}
			for _, h := range r.Headers {
				if h.Key == kafka.SourceHeader {
					rec.sources = append(rec.sources, string(h.Value))
				}
			}
			out = append(out, rec)
		})
	}
	return out
}

func TestSend_EveryRecordNamesItsSource_ASourceWithItsOwnTopicGetsOnlyItsEvents(t *testing.T) {
	c := startCluster(t, kfake.SeedTopics(3, "app-a.events", "main.events"))
	d := newDest(t, c, kafka.Config{Topics: map[string]string{"app-a": "app-a.events", "default": "main.events"}})

	// Batch.Source "" is the default source, whose own topic is main.events; app-b has no
	// topic of its own and produces to upload.kafka.topic.
	batches := []struct{ source, header, topic string }{
		{"app-a", "app-a", "app-a.events"},
		{"app-b", "app-b", topic},
		{"", "default", "main.events"},
		{"relay-0123456789ab", "relay-0123456789ab", topic},
	}
	want := map[string]sourceRecord{} // by value
	for _, b := range batches {
		evs, _ := trackEvents("src-"+b.header, 25)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		o := d.Send(ctx, delivery.Batch{Events: evs, Source: b.source})
		cancel()
		mustClass(t, o, delivery.ClassSuccess)
		for _, ev := range evs {
			want[string(ev)] = sourceRecord{topic: b.topic, sources: []string{b.header}}
		}
	}

	got := consumeTopics(t, c, len(want), topic, "app-a.events", "main.events")
	perTopic := map[string]int{}
	for _, r := range got {
		w, ok := want[r.value]
		if !ok {
			t.Fatalf("a record nobody sent: %s", r.value)
		}
		if r.topic != w.topic {
			t.Errorf("an event of source %v went to topic %s, want %s", w.sources, r.topic, w.topic)
		}
		if !slices.Equal(r.sources, w.sources) {
			t.Errorf("a record in %s has %s headers %q, want exactly %q", r.topic, kafka.SourceHeader, r.sources, w.sources)
		}
		perTopic[r.topic]++
	}
	if fmt.Sprint(perTopic) != fmt.Sprint(map[string]int{topic: 50, "app-a.events": 25, "main.events": 25}) {
		t.Errorf("records per topic %v, want 50 in %s (app-b and the relay source), 25 in each source's own", perTopic, topic)
	}
}

func TestNew_TheSourcesTopicsAreCopied_LaterChangesToTheMapDoNotReachSend(t *testing.T) {
	c := startCluster(t, kfake.SeedTopics(1, "app-a.events"))
	topics := map[string]string{"app-a": "app-a.events"}
	d := newDest(t, c, kafka.Config{Topics: topics})
	topics["app-a"] = "elsewhere"
	evs, _ := trackEvents("copy-topics", 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mustClass(t, d.Send(ctx, delivery.Batch{Events: evs, Source: "app-a"}), delivery.ClassSuccess)
	for _, r := range consumeTopics(t, c, len(evs), "app-a.events") {
		if r.topic != "app-a.events" {
			t.Fatalf("record in %s, want app-a.events", r.topic)
		}
	}
	if got := d.Config().Topics["app-a"]; got != "app-a.events" {
		t.Errorf("Config().Topics[app-a] = %q, want the topic New was given", got)
	}
}
