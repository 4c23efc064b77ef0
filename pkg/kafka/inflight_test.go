package kafka_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMaxInFlight_FollowsTheProducersInFlightLimitPerBroker(t *testing.T) {
	tests := []struct {
		name string
		opts []kgo.Opt
		want int
	}{
		{"idempotent (the default)", nil, 5},
		{"idempotence off, kgo's default", []kgo.Opt{kgo.DisableIdempotentWrite()}, 1},
		{"idempotence off, 3 per broker", []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(3)}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := kafka.New(kafka.Config{Brokers: []string{"127.0.0.1:1"}, Topic: topic}, kafka.WithClientOptions(tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if got := d.MaxInFlight(); got != tt.want {
				t.Fatalf("MaxInFlight %d, want %d", got, tt.want)
			}
		})
	}
}

// sendAll sends every batch through d at once, one goroutine each, and returns their outcomes
// in the batches' order.
func sendAll(t *testing.T, d delivery.Destination, batches [][][]byte) []delivery.Outcome {
	t.Helper()
	out := make([]delivery.Outcome, len(batches))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, evs := range batches {
		wg.Go(func() {
			<-start
			out[i] = send(t, d, evs)
		})
	}
	close(start)
	wg.Wait()
	return out
}

func size(evs [][]byte) int {
	n := 0
	for _, ev := range evs {
		n += len(ev)
	}
	return n
}

func TestSend_SeveralBatchesAtOnce_EachDeliveredOnceWithItsOwnOutcome(t *testing.T) {
	c := startCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(6, topic))
	d := newDest(t, c, kafka.Config{})
	var batches [][][]byte
	var ids []string
	for i := range 8 {
		evs, bids := trackEvents("many"+strings.Repeat("x", i), 100+i) // sizes differ per batch
		batches, ids = append(batches, evs), append(ids, bids...)
	}
	for i, o := range sendAll(t, d, batches) {
		mustClass(t, o, delivery.ClassSuccess)
		if o.Bytes != size(batches[i]) || !o.Written {
			t.Errorf("batch %d: Bytes %d Written %v, want its own %d bytes and written", i, o.Bytes, o.Written, size(batches[i]))
		}
	}
	got := consumeAll(t, c, topic, len(ids))
	if len(got) != len(ids) {
		t.Fatalf("consumed %d records for %d events, want each once", len(got), len(ids))
	}
}

func TestSend_SeveralBatchesAtOnce_ABrokerErrorOnOneBatchFailsThatBatchOnly(t *testing.T) {
	tests := []struct {
		err  *kerr.Error
		want delivery.Class
	}{
		{kerr.InvalidRecord, delivery.ClassRejected},
		{kerr.NotEnoughReplicas, delivery.ClassRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.err.Message, func(t *testing.T) {
			c := startCluster(t)
			// Records keyed "bad-…" go to partition 2, the others to 0 and 1, and every produce
			// to partition 2 fails: the broker error reaches one batch's records only.
			byKey := kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
				return func(r *kgo.Record, _ int) int {
					if strings.HasPrefix(string(r.Key), "bad-") {
						return 2
					}
					return len(r.Key) % 2
				}
			})
			// A few record retries: a transient error on a loaded machine (a retriable answer
			// while the cluster settles) must not fail a good batch; the fault on partition 2
			// outlasts them, and kgo then reports its error.
			d := newDest(t, c, kafka.Config{}, kafka.WithClientOptions(kgo.RecordPartitioner(byKey), kgo.RecordRetries(3)))
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Partitions: []int32{2}, Err: tt.err, Count: -1})

			bad, _ := trackEvents("bad", 40)
			batches := [][][]byte{bad}
			var goodIDs []string
			for _, p := range []string{"a", "bb", "ccc", "dddd", "eeeee"} {
				evs, ids := trackEvents(p, 60)
				batches, goodIDs = append(batches, evs), append(goodIDs, ids...)
			}
			outs := sendAll(t, d, batches)
			mustClass(t, outs[0], tt.want)
			if outs[0].Code != tt.err.Message || outs[0].Bytes != size(bad) {
				t.Errorf("failed batch: code %q bytes %d, want %s and its own %d bytes", outs[0].Code, outs[0].Bytes, tt.err.Message, size(bad))
			}
			for i, o := range outs[1:] {
				mustClass(t, o, delivery.ClassSuccess)
				if o.Bytes != size(batches[i+1]) {
					t.Errorf("batch %d: Bytes %d, want its own %d", i+1, o.Bytes, size(batches[i+1]))
				}
			}
			for _, r := range consumeAll(t, c, topic, len(goodIDs)) {
				if r.partition == 2 || strings.HasPrefix(string(r.key), "bad-") {
					t.Fatalf("a record of the failed batch was written: key %q partition %d", r.key, r.partition)
				}
			}
		})
	}
}

// countingDest is the Kafka destination with a count of the Sends in progress: the most seen
// at once, and a signal when full (the producer's bound) is first reached.
type countingDest struct {
	*kafka.Destination
	cur, most atomic.Int64
	full      chan struct{}
	fullOnce  sync.Once
}

func newCounting(d *kafka.Destination) *countingDest {
	return &countingDest{Destination: d, full: make(chan struct{})}
}

func (c *countingDest) Send(ctx context.Context, b delivery.Batch) delivery.Outcome {
	n := c.cur.Add(1)
	defer c.cur.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	if n >= int64(c.MaxInFlight()) {
		c.fullOnce.Do(func() { close(c.full) })
	}
	return c.Destination.Send(ctx, b)
}

// holdProduce holds every produce request at the cluster until release is closed (or 10 s).
func holdProduce(c *kfake.Cluster, release <-chan struct{}) {
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		})
		return nil, nil, false
	})
}

func TestWorker_SeveralBatchesInFlight_UpToTheProducersBound_EveryEventArrives(t *testing.T) {
	tests := []struct {
		name, concurrency string
		hold              bool // hold produce until the bound is in flight, to see it reached
	}{
		{"fixed 8, clamped to the producer's 5", "8", true},
		{"auto", "auto", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(6, topic))
			d := newCounting(newDest(t, c, kafka.Config{}))
			if tt.hold {
				holdProduce(c, d.full)
			}
			cl := openClient(t, d, func(cfg *uploader.Config) {
				cfg.Upload.Concurrency = tt.concurrency
				cfg.Batch.MaxEvents = 50
			})
			ids := enqueueTracks(t, cl, "many", 1000, 20) // 20 batches
			drain(t, cl)
			for id, n := range consumedIDs(t, c, ids) {
				if n != 1 {
					t.Errorf("event %s arrived %d times, want once (no failure, no retry)", id, n)
				}
			}
			most := d.most.Load()
			t.Logf("at most %d batches in flight", most)
			if most > 5 || (tt.hold && most != 5) {
				t.Fatalf("at most %d batches were in flight at once, want the producer's 5%s", most,
					map[bool]string{true: " (reached)", false: " or fewer"}[tt.hold])
			}
		})
	}
}

func TestClose_SeveralBatchesInFlightOnAClusterThatNeverAnswers_IsBounded_NothingLost(t *testing.T) {
	c := startCluster(t)
	release := make(chan struct{})
	holdProduce(c, release)
	d := newCounting(newDest(t, c, kafka.Config{}))
	cfg := uploader.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Queue.Sync = "none"
	cfg.Upload.Concurrency = "8"
	cfg.Batch.MaxEvents = 50
	cfg.Batch.Interval = 10 * time.Millisecond
	cl, err := uploader.Open(cfg, uploader.WithDestination(d))
	if err != nil {
		t.Fatal(err)
	}
	ids := enqueueTracks(t, cl, "held", 500, 20)
	select {
	case <-d.full:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d batches in flight after 10s, want 5", d.cur.Load())
	}

	// Close's deadline has passed already: it cuts the five attempts and closes the producer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	begin := time.Now()
	_ = cl.Close(ctx)
	took := time.Since(begin)
	t.Logf("Close with 5 batches in flight took %s", took)
	if took > time.Second {
		t.Fatalf("Close took %s past its deadline with 5 batches in flight, want under 1s", took)
	}
	close(release)

	// Every event stayed queued: the next start delivers them all.
	again := openClient(t, newDest(t, c, kafka.Config{}), func(c *uploader.Config) {
		c.DataDir = cfg.DataDir
		c.Upload.Concurrency = "8"
	})
	drain(t, again)
	consumedIDs(t, c, ids)
}
