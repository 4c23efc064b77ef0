package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/kafka"
)

func TestSend_EveryRecordConsumedBack_ValueByteIdentical_WithTheChosenKey(t *testing.T) {
	tests := []struct{ key, compression string }{
		{"", ""}, // the defaults: messageId, snappy
		{kafka.KeyMessageID, kafka.CompressionGzip},
		{kafka.KeyUserID, kafka.CompressionLZ4},
		{kafka.KeyNone, kafka.CompressionZstd},
		{kafka.KeyMessageID, kafka.CompressionNone},
	}
	for _, tt := range tests {
		name := "key=" + tt.key + ",compression=" + tt.compression
		t.Run(name, func(t *testing.T) {
			c := startCluster(t)
			d := newDest(t, c, kafka.Config{Key: tt.key, Compression: tt.compression})
			evs, ids := trackEvents("rt", 200)
			o := send(t, d, evs)
			mustClass(t, o, delivery.ClassSuccess)
			if !o.Written || o.Bytes == 0 {
				t.Errorf("success outcome Written=%v Bytes=%d, want true and the bytes sent", o.Written, o.Bytes)
			}
			byValue := map[string]consumed{}
			for _, r := range consumeAll(t, c, topic, len(evs)) {
				byValue[string(r.value)] = r
			}
			for i, ev := range evs {
				r, ok := byValue[string(ev)]
				if !ok {
					t.Fatalf("event %s not consumed back byte for byte", ids[i])
				}
				want := ids[i] // messageId, the default
				switch tt.key {
				case kafka.KeyUserID:
					want = "user-" + string(rune('0'+i%7))
				case kafka.KeyNone:
					want = ""
				}
				if string(r.key) != want {
					t.Fatalf("event %s has key %q, want %q", ids[i], r.key, want)
				}
			}
		})
	}
}

func TestSend_ValuesAreCopied_CallerMayReuseTheBufferAfterSend(t *testing.T) {
	c := startCluster(t)
	d := newDest(t, c, kafka.Config{})
	evs, _ := trackEvents("copy", 10)
	orig := make([][]byte, len(evs))
	for i, ev := range evs {
		orig[i] = bytes.Clone(ev)
	}
	mustClass(t, send(t, d, evs), delivery.ClassSuccess)
	for _, ev := range evs {
		for i := range ev {
			ev[i] = 'x'
		}
	}
	got := consumeAll(t, c, topic, len(orig))
	for _, r := range got {
		if bytes.Contains(r.value, []byte("xxxx")) {
			t.Fatalf("a consumed record shows the caller's later writes: %q", r.value)
		}
	}
}

func TestSend_RetriableError_IsRetryableWithItsName_ThenDelivered(t *testing.T) {
	c := startCluster(t)
	d := newDest(t, c, kafka.Config{})
	evs, ids := trackEvents("retry", 50)

	// Every produce fails: past kgo's few retries inside the attempt, the worker's budget
	// decides, and the outcome names the Kafka error.
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	o := send(t, d, evs)
	mustClass(t, o, delivery.ClassRetryable)
	if o.Code != "NOT_ENOUGH_REPLICAS" || !errors.Is(o.Err, kerr.NotEnoughReplicas) {
		t.Fatalf("outcome code %q err %v, want NOT_ENOUGH_REPLICAS", o.Code, o.Err)
	}
	h.Remove()

	// A short failure kgo rides out inside one attempt.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotLeaderForPartition, Count: 2})
	mustClass(t, send(t, d, evs), delivery.ClassSuccess)
	got := consumeAll(t, c, topic, len(ids))
	if len(got) != len(ids) {
		t.Errorf("consumed %d records for %d events; the failed attempt wrote none, the retry each once", len(got), len(ids))
	}
}

func TestSend_NonRetriableError_IsRejectedWithItsName(t *testing.T) {
	for _, e := range []*kerr.Error{kerr.InvalidRecord, kerr.UnknownServerError} {
		t.Run(e.Message, func(t *testing.T) {
			c := startCluster(t)
			d := newDest(t, c, kafka.Config{})
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: e, Count: -1})
			evs, _ := trackEvents("rej", 20)
			o := send(t, d, evs)
			mustClass(t, o, delivery.ClassRejected)
			if o.Code != e.Message || !strings.Contains(string(o.Detail), e.Message) {
				t.Fatalf("code %q detail %q, want both to name %s", o.Code, o.Detail, e.Message)
			}
		})
	}
}

func TestSend_NotAuthorized_IsAuthRefusedNamingTheKey(t *testing.T) {
	for _, e := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed} {
		t.Run(e.Message, func(t *testing.T) {
			c := startCluster(t)
			d := newDest(t, c, kafka.Config{})
			c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: e, Count: -1})
			evs, _ := trackEvents("authz", 20)
			o := send(t, d, evs)
			mustClass(t, o, delivery.ClassAuthRefused)
			var ce *delivery.ConfigError
			if o.Code != e.Message || !errors.As(o.Err, &ce) || ce.Key != "upload.kafka.sasl" || !errors.Is(o.Err, e) {
				t.Fatalf("code %q err %v, want %s as a *delivery.ConfigError on upload.kafka.sasl", o.Code, o.Err, e.Message)
			}
		})
	}
}

func TestSend_OverTheClusterSizeLimit_IsTooLarge_HalvesFit(t *testing.T) {
	// One partition and a linger, so the 40 records go as one record batch: without them, kgo
	// may send the first records alone on a loaded machine, and each part would fit.
	c := startCluster(t, kfake.BrokerConfigs(map[string]string{"message.max.bytes": "4000"}), kfake.SeedTopics(1, "one-partition"))
	d := newDest(t, c, kafka.Config{Topic: "one-partition", Compression: kafka.CompressionNone, Key: kafka.KeyNone},
		kafka.WithClientOptions(kgo.ProducerLinger(300*time.Millisecond)))
	evs, _ := trackEvents("big", 40) // about 8 KB
	o := send(t, d, evs)
	mustClass(t, o, delivery.ClassTooLarge)
	if o.Code != "MESSAGE_TOO_LARGE" {
		t.Fatalf("code %q, want MESSAGE_TOO_LARGE", o.Code)
	}
	for _, half := range [][][]byte{evs[:10], evs[10:20], evs[20:30], evs[30:]} {
		mustClass(t, send(t, d, half), delivery.ClassSuccess)
	}
	single := [][]byte{append([]byte(`{"messageId":"huge","pad":"`), append(bytes.Repeat([]byte("p"), 5000), `"}`...)...)}
	o = send(t, d, single)
	mustClass(t, o, delivery.ClassTooLarge)
}

func TestSend_WrongSASLPassword_IsAuthRefusedWithAConfigError_NothingToDeadLetter(t *testing.T) {
	tests := []struct {
		name, mechanism, kfakeMechanism string
		refuseLikeKafka                 bool // answer SASL_AUTHENTICATION_FAILED, as Kafka brokers do
	}{
		{"scram-sha-256, the broker hangs up", kafka.SASLScramSHA256, "SCRAM-SHA-256", false},
		{"scram-sha-512, the broker hangs up", kafka.SASLScramSHA512, "SCRAM-SHA-512", false},
		{"plain, the broker answers SASL_AUTHENTICATION_FAILED", kafka.SASLPlain, "PLAIN", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, kfake.EnableSASL(), kfake.Superuser(tt.kfakeMechanism, "outbox", "right-password"))
			if tt.refuseLikeKafka {
				c.ControlKey(int16(kmsg.SASLAuthenticate), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
					c.KeepControl()
					req := kreq.(*kmsg.SASLAuthenticateRequest)
					if bytes.HasSuffix(req.SASLAuthBytes, []byte("\x00right-password")) {
						return nil, nil, false
					}
					resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
					resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
					msg := "Authentication failed: Invalid username or password"
					resp.ErrorMessage = &msg
					return resp, nil, true
				})
			}
			d := newDest(t, c, kafka.Config{SASL: kafka.SASLConfig{Mechanism: tt.mechanism, Username: "outbox", Password: "wrong-password"}})
			evs, _ := trackEvents("sasl", 5)
			begin := time.Now()
			o := send(t, d, evs)
			mustClass(t, o, delivery.ClassAuthRefused)
			if took := time.Since(begin); took > 5*time.Second {
				t.Errorf("a refused login took %s to report", took)
			}
			var ce *delivery.ConfigError
			if !errors.As(o.Err, &ce) || !strings.Contains(o.Err.Error(), "SASL") {
				t.Fatalf("err %v, want a *delivery.ConfigError that says SASL", o.Err)
			}
			if tt.refuseLikeKafka && (o.Code != "SASL_AUTHENTICATION_FAILED" || !errors.Is(o.Err, kerr.SaslAuthenticationFailed)) {
				t.Errorf("code %q err %v, want SASL_AUTHENTICATION_FAILED", o.Code, o.Err)
			}
			if strings.Contains(o.Err.Error(), "wrong-password") || strings.Contains(string(o.Detail), "wrong-password") {
				t.Fatalf("the error shows the password: %v", o.Err)
			}

			good := newDest(t, c, kafka.Config{SASL: kafka.SASLConfig{Mechanism: tt.mechanism, Username: "outbox", Password: "right-password"}})
			mustClass(t, send(t, good, evs), delivery.ClassSuccess)
		})
	}
}

func TestSend_NoBrokerListening_IsRetryableNeverSent(t *testing.T) {
	addr := testutil.FreeAddr(t) // nothing listens there
	d, err := kafka.New(kafka.Config{Brokers: []string{addr}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	evs, _ := trackEvents("down", 3)
	o := send(t, d, evs)
	mustClass(t, o, delivery.ClassRetryable)
	if o.NetError != delivery.NeverSent || o.Written {
		t.Fatalf("net error %q written %v, want never_sent and not written (err %v)", o.NetError, o.Written, o.Err)
	}
}

func TestSend_BrokerNeverAnswers_ReturnsAtTheDeadline_MaybeSent_CloseIsPrompt(t *testing.T) {
	c := startCluster(t)
	release := make(chan struct{})
	defer close(release)
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	d := newDest(t, c, kafka.Config{})
	evs, _ := trackEvents("hang", 20)

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	begin := time.Now()
	o := d.Send(ctx, delivery.Batch{Events: evs})
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("Send took %s after a 500ms deadline", took)
	}
	mustClass(t, o, delivery.ClassRetryable)
	if o.NetError != delivery.MaybeSent || !o.Written {
		t.Fatalf("net error %q written %v, want maybe_sent and written", o.NetError, o.Written)
	}

	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	mustClass(t, d.Send(cctx, delivery.Batch{Events: evs}), delivery.ClassAborted)

	begin = time.Now()
	_ = d.Close()
	t.Logf("Close with a produce in flight took %s", time.Since(begin))
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("Close took %s with a produce in flight", took)
	}
}

func TestSend_ThrottledAndFailing_IsRateLimitedForTheThrottleTime(t *testing.T) {
	c := startCluster(t)
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.ThrottleMillis = 30_000
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	d := newDest(t, c, kafka.Config{})
	evs, _ := trackEvents("throttle", 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	o := d.Send(ctx, delivery.Batch{Events: evs})
	mustClass(t, o, delivery.ClassRateLimited)
	if o.RetryAfter != 30*time.Second {
		t.Fatalf("RetryAfter %s, want the cluster's 30s throttle", o.RetryAfter)
	}
}

func TestSend_EmptyBatch_IsSuccessWithoutProducing(t *testing.T) {
	d, err := kafka.New(kafka.Config{Brokers: []string{"127.0.0.1:1"}, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mustClass(t, d.Send(context.Background(), delivery.Batch{}), delivery.ClassSuccess)
	if d.Name() != "kafka" {
		t.Errorf("Name %q, want kafka", d.Name())
	}
}

// throttledSuccess answers every record of a produce request as written, with the cluster
// asking the client to hold off for throttle (a quota): kfake answers nothing itself.
func throttledSuccess(req *kmsg.ProduceRequest, throttle time.Duration) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.ThrottleMillis = int32(throttle / time.Millisecond)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func TestSend_ThrottledSuccess_IsASuccessWithBackPressure(t *testing.T) {
	c := startCluster(t)
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return throttledSuccess(kreq.(*kmsg.ProduceRequest), time.Millisecond), nil, true
	})
	d := newDest(t, c, kafka.Config{})
	evs, _ := trackEvents("throttled-ok", 10)
	o := send(t, d, evs)
	mustClass(t, o, delivery.ClassSuccess)
	if !o.BackPressure || o.Code != kafka.SuccessCode {
		t.Fatalf("outcome %+v; want a success (code ok) with back-pressure", o)
	}
	unthrottled := send(t, newDest(t, startCluster(t), kafka.Config{}), evs)
	if unthrottled.BackPressure {
		t.Fatal("a produce the cluster did not throttle reports back-pressure")
	}
}
