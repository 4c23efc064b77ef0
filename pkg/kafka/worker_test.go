package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/budget/budgettest"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openClient opens an embedded client on a fresh data directory that delivers to d, on an
// auto-advancing fake clock: budget waits pass at once, kgo's own waits are real and short.
func openClient(t testing.TB, d delivery.Destination, edit func(*uploader.Config), opts ...uploader.Option) *uploader.Client {
	t.Helper()
	cfg := uploader.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Queue.Sync = "none"
	cfg.Upload.Timeout = 10 * time.Second
	cfg.Batch.Interval = 10 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	opts = append([]uploader.Option{uploader.WithDestination(d), uploader.WithClock(budgettest.NewAuto(time.Time{}))}, opts...)
	c, err := uploader.Open(cfg, opts...)
	if err != nil {
		t.Fatalf("uploader.Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// fastDest is a destination whose kgo does not retry inside an attempt, so that every failure
// reaches the worker's budgets at once.
func fastDest(t testing.TB, c *kfake.Cluster, cfg kafka.Config) *kafka.Destination {
	t.Helper()
	return newDest(t, c, cfg, kafka.WithClientOptions(kgo.RecordRetries(0)))
}

// enqueueTracks enqueues n track events with messageIds prefix-0.. and returns the ids.
func enqueueTracks(t testing.TB, c *uploader.Client, prefix string, n, pad int) []string {
	t.Helper()
	ids := make([]string, n)
	evs := make([]any, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		evs[i] = fmt.Appendf(nil, `{"type":"track","event":"Worked","userId":"u%d","messageId":%q,"properties":{"pad":%q}}`,
			i, ids[i], strings.Repeat("p", pad))
	}
	if err := c.Enqueue(context.Background(), evs...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return ids
}

// drain flushes until the queue is empty (riding out budget waits, which the fake clock
// ends at once), or fails after 20 s.
func drain(t testing.TB, c *uploader.Client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := c.Flush(ctx)
		cancel()
		var we *uploader.WaitingError
		switch {
		case err == nil:
			return
		case !errors.As(err, &we) && !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("Flush: %v", err)
		case time.Now().After(deadline):
			t.Fatalf("queue not drained after 20s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// consumedIDs reads the topic back until every id arrived and returns how often each did.
func consumedIDs(t testing.TB, c *kfake.Cluster, ids []string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, r := range consumeAll(t, c, topic, len(ids)) {
		var ev struct {
			MessageID string `json:"messageId"`
		}
		if err := json.Unmarshal(r.value, &ev); err != nil {
			t.Fatalf("a record is not JSON: %v: %q", err, r.value)
		}
		if string(r.key) != ev.MessageID {
			t.Fatalf("record key %q, want its messageId %q", r.key, ev.MessageID)
		}
		got[ev.MessageID]++
	}
	for _, id := range ids {
		if got[id] == 0 {
			t.Fatalf("event %s never arrived", id)
		}
	}
	return got
}

func TestWorker_RetriableErrors_TakeTheBackoffPath_ThenEveryEventArrives(t *testing.T) {
	c := startCluster(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	var retries atomic.Int64
	cl := openClient(t, fastDest(t, c, kafka.Config{}), nil, uploader.WithHooks(uploader.Hooks{
		OnRetry: func(path string, _ time.Duration) {
			if path == uploader.PathBackoff && retries.Add(1) == 2 {
				fault.Remove() // the cluster recovers after two counted retries
			}
		},
	}))
	ids := enqueueTracks(t, cl, "wretry", 30, 10)
	drain(t, cl)
	consumedIDs(t, c, ids)
	st := cl.Stats()
	if st.Counters.RetriesBackoff < 2 || st.Counters.EventsDead != 0 || st.Upload.Destination != "kafka" {
		t.Fatalf("backoff retries %d, dead %d, destination %q; want >= 2, 0, kafka",
			st.Counters.RetriesBackoff, st.Counters.EventsDead, st.Upload.Destination)
	}
}

func TestWorker_RetriesSpent_DeadLettersWithTheKafkaErrorName(t *testing.T) {
	c := startCluster(t)
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	cl := openClient(t, fastDest(t, c, kafka.Config{}), func(cfg *uploader.Config) { cfg.Retry.MaxRetries = 2 })
	enqueueTracks(t, cl, "wspent", 5, 10)
	drain(t, cl)
	assertOneDeadLetter(t, cl, 5, "NOT_ENOUGH_REPLICAS")
}

func TestWorker_NonRetriableError_DeadLettersWithItsName_ReplayDelivers(t *testing.T) {
	c := startCluster(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.InvalidRecord, Count: -1})
	cl := openClient(t, fastDest(t, c, kafka.Config{}), nil)
	ids := enqueueTracks(t, cl, "wrej", 8, 10)
	drain(t, cl)
	dead := assertOneDeadLetter(t, cl, 8, "INVALID_RECORD")

	fault.Remove() // the cause is fixed: the dead letter replays
	if n, err := cl.DeadLetters().Replay(context.Background(), dead.ID); err != nil || n != len(ids) {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	drain(t, cl)
	consumedIDs(t, c, ids)
}

func TestWorker_BatchOverTheSizeLimit_IsSplit_ASingleHugeEventIsDeadLettered(t *testing.T) {
	c := startCluster(t, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "6000"}))
	cl := openClient(t, fastDest(t, c, kafka.Config{Compression: kafka.CompressionNone}), nil)
	// One enqueue, one batch: 40 events of about 400 bytes, over 3 partitions still more than
	// 6000 bytes each, and one event that alone is over the limit.
	ids := enqueueTracks(t, cl, "wsplit", 40, 300)
	huge := enqueueTracks(t, cl, "whuge", 1, 7000)
	drain(t, cl)
	got := consumedIDs(t, c, ids)
	if got[huge[0]] != 0 {
		t.Fatal("the event over the cluster's limit was delivered")
	}
	assertOneDeadLetter(t, cl, 1, "MESSAGE_TOO_LARGE")
}

func TestWorker_NotAuthorized_PausesDelivery_NothingDeadLettered_ResumesWhenAuthorized(t *testing.T) {
	c := startCluster(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.TopicAuthorizationFailed, Count: -1})
	clk := budgettest.New(time.Time{})
	cl := openClient(t, fastDest(t, c, kafka.Config{}), nil, uploader.WithClock(clk))
	ids := enqueueTracks(t, cl, "wauth", 8, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.Flush(ctx); !errors.Is(err, uploader.ErrAuthRefused) || !strings.Contains(err.Error(), "upload.kafka.sasl") {
		t.Fatalf("Flush = %v, want delivery paused naming upload.kafka.sasl", err)
	}
	if st := cl.Stats(); st.Counters.EventsDead != 0 || st.Queue.Events != 8 || st.AuthPause.Code != "TOPIC_AUTHORIZATION_FAILED" {
		t.Fatalf("dead %d, queued %d, pause %+v; want nothing dead, all queued, paused on TOPIC_AUTHORIZATION_FAILED",
			st.Counters.EventsDead, st.Queue.Events, st.AuthPause)
	}
	if err := clk.BlockUntil(ctx, 1); err != nil { // the head waits for its probe
		t.Fatal(err)
	}
	fault.Remove() // the ACL is granted: the next probe resumes delivery
	clk.Advance(time.Minute)
	for cl.Stats().AuthPause.Paused {
		if ctx.Err() != nil {
			t.Fatal("the probe after the fix did not resume delivery")
		}
		time.Sleep(time.Millisecond)
	}
	drain(t, cl)
	consumedIDs(t, c, ids)
}

func TestWorker_WrongSASLPassword_NothingDeadLettered_FlushSaysWhy(t *testing.T) {
	c := startCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "outbox", "right-password"))
	d := newDest(t, c, kafka.Config{SASL: kafka.SASLConfig{Mechanism: kafka.SASLScramSHA512, Username: "outbox", Password: "wrong-password"}})
	// The real clock: a refusal spends no budget, and the pause lasts a probe period.
	cl := openClient(t, d, nil, uploader.WithClock(budget.System))
	enqueueTracks(t, cl, "wsasl", 10, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cl.Flush(ctx)
	if !errors.Is(err, uploader.ErrAuthRefused) || !strings.Contains(err.Error(), "upload.kafka.sasl") || strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("Flush = %v; want delivery paused naming upload.kafka.sasl, without the password", err)
	}
	st := cl.Stats()
	if st.Counters.EventsDead != 0 || st.Queue.Events != 10 || st.Counters.RetriesBackoff != 0 {
		t.Fatalf("dead %d, queued %d, backoff retries %d; want 0, 10 and 0: a refused login is not the batch's fault",
			st.Counters.EventsDead, st.Queue.Events, st.Counters.RetriesBackoff)
	}
}

// assertOneDeadLetter checks that the dead letters hold one batch of events events whose
// reason names code, and returns it.
func assertOneDeadLetter(t testing.TB, cl *uploader.Client, events int, code string) uploader.DeadBatch {
	t.Helper()
	list, err := cl.DeadLetters().List()
	if err != nil || len(list) != 1 {
		t.Fatalf("dead letters = %d, %v; want 1", len(list), err)
	}
	d := list[0]
	if d.Count != events || !strings.Contains(d.Info.Detail, code) {
		t.Fatalf("dead letter of %d events, detail %q; want %d events and a detail naming %s", d.Count, d.Info.Detail, events, code)
	}
	return d
}

func TestWorker_Success_IsReportedAsOK_InStatsAndMetrics(t *testing.T) {
	c := startCluster(t)
	m, err := agent.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := openClient(t, newDest(t, c, kafka.Config{}), nil, uploader.WithHooks(m.Hooks()))
	ids := enqueueTracks(t, cl, "wok", 12, 10)
	drain(t, cl)
	consumedIDs(t, c, ids)
	if got := cl.Stats().Upload.LastResult; got != kafka.SuccessCode {
		t.Fatalf("last result %q after a delivered batch, want %q", got, kafka.SuccessCode)
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "outbox_upload_requests_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "code" {
					codes[l.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
	}
	if codes[kafka.SuccessCode] < 1 || len(codes) != 1 {
		t.Fatalf("outbox_upload_requests_total by code = %v; want only %q", codes, kafka.SuccessCode)
	}
}

func TestWorker_Throttling_LowersTheLimitOfBatchesInFlight(t *testing.T) {
	c := startCluster(t)
	var produced, throttled atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if produced.Add(1) <= 60 || throttled.Load() == 0 {
			return nil, nil, false // kfake answers: no throttle
		}
		return throttledSuccess(kreq.(*kmsg.ProduceRequest), time.Millisecond), nil, true
	})
	cl := openClient(t, newDest(t, c, kafka.Config{}), func(cfg *uploader.Config) { cfg.Batch.MaxEvents = 2 })
	enqueueTracks(t, cl, "wgrow", 400, 10)
	peak := 0
	for produced.Load() < 60 {
		peak = max(peak, cl.Stats().Upload.ConcurrencyLimit)
		time.Sleep(time.Millisecond)
	}
	drain(t, cl)
	peak = max(peak, cl.Stats().Upload.ConcurrencyLimit)
	if peak < 2 {
		t.Fatalf("the limit never grew above %d without throttling", peak)
	}
	throttled.Store(1) // from here every produce is throttled
	enqueueTracks(t, cl, "wthrottled", 100, 10)
	drain(t, cl)
	if got := cl.Stats().Upload.ConcurrencyLimit; got >= peak {
		t.Fatalf("limit %d after throttled produces, want it below the %d it reached without", got, peak)
	}
}
