package test_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kafkaTopic is the topic of the test clusters.
const kafkaTopic = "events"

// startKafka starts a 3-broker Kafka-protocol cluster in this process, on loopback.
func startKafka(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(6, kafkaTopic)}, opts...)...)
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// kafkaEnv configures an agent for the cluster, through OUTBOX_* variables only.
func kafkaEnv(c *kfake.Cluster, extra map[string]string) map[string]string {
	env := map[string]string{
		"OUTBOX_UPLOAD_DESTINATION":   "kafka",
		"OUTBOX_UPLOAD_KAFKA_BROKERS": strings.Join(c.ListenAddrs(), ","),
		"OUTBOX_UPLOAD_KAFKA_TOPIC":   kafkaTopic,
		"OUTBOX_BATCH_MAX_EVENTS":     "100",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// noRaceExitSleep keeps a race-enabled agent from sleeping 1 s at exit (the race runtime's
// atexit_sleep_ms default), which would count against its shutdown deadline.
var noRaceExitSleep = map[string]string{"GORACE": "atexit_sleep_ms=0"}

// unusedEndpoint is the upload.endpoint of agents that deliver to Kafka.
const unusedEndpoint = "http://127.0.0.1:1/unused"

// kafkaReader consumes the topic from the start in the background and counts each messageId
// (the record key) it reads.
type kafkaReader struct {
	mu   sync.Mutex
	seen map[string]int
	n    int
}

func readKafka(t testing.TB, c *kfake.Cluster, opts ...kgo.Opt) *kafkaReader {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(kafkaTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r := &kafkaReader{seen: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
				r.mu.Lock()
				r.seen[string(rec.Key)]++
				r.n++
				r.mu.Unlock()
			})
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	return r
}

// missing counts the ids not read yet.
func (r *kafkaReader) missing(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if r.seen[id] == 0 {
			n++
		}
	}
	return n
}

// waitAll waits until every id was read, at most d; it returns how many are still missing.
func (r *kafkaReader) waitAll(ids []string, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		m := r.missing(ids)
		if m == 0 || time.Now().After(deadline) {
			return m
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKafka_AgentFromEnvOnly_TwoSIGKILLsMidProduce_NothingAcknowledgedLost(t *testing.T) {
	c := startKafka(t)
	produces := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Observe: true, Count: -1})
	// Some produces fail with a retriable error, so batches are retried across the kills too.
	var nth atomic.Int64
	flaky := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1,
		When: func(kmsg.Request) bool { return nth.Add(1)%10 == 0 }})
	reader := readKafka(t, c)
	dir := t.TempDir()
	var log ackLog
	const kills, producers, perBatch, killAfter, maxPerProducer = 2, 4, 10, 30, 60
	for cycle := range kills {
		a := startAgent(t, dir, unusedEndpoint, kafkaEnv(c, nil))
		stop := make(chan struct{})
		// Bounded per producer, so the drain after the kills is too.
		requests, wait := log.produce(a.url+"/v1/batch", fmt.Sprintf("kk-c%d", cycle),
			load{producers: producers, perBatch: perBatch, max: maxPerProducer}, stop)
		// Kill once enough requests were acknowledged and produce requests are flowing.
		before := produces.Hits()
		deadline := time.Now().Add(20 * time.Second)
		for requests.Load() < killAfter || produces.Hits() <= before+2 {
			if time.Now().After(deadline) {
				t.Fatalf("cycle %d: %d requests acknowledged, %d produce requests", cycle, requests.Load(), produces.Hits()-before)
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("cycle %d: SIGKILL after %d acknowledged requests, %d produce requests", cycle, requests.Load(), produces.Hits()-before)
		a.signal(t, syscall.SIGKILL)
		close(stop)
		a.wait(t, 5*time.Second)
		wait()
	}
	acked := log.ids

	flaky.Remove()
	startAgent(t, dir, unusedEndpoint, kafkaEnv(c, nil))
	begin := time.Now()
	missing := reader.waitAll(acked, 60*time.Second)
	t.Logf("after the restart every acknowledged event arrived within %s", time.Since(begin).Round(time.Millisecond))
	reader.mu.Lock()
	t.Logf("%d kills: %d acknowledged events, %d records read (%d distinct)", kills, len(acked), reader.n, len(reader.seen))
	reader.mu.Unlock()
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged events never reached the topic", missing, len(acked))
	}
}

func TestKafka_SIGTERM_DuringALongBackoff_ExitsInTime_RestartDelivers(t *testing.T) {
	c := startKafka(t)
	fault := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotEnoughReplicas, Count: -1})
	reader := readKafka(t, c)
	dir := t.TempDir()
	long := map[string]string{"OUTBOX_RETRY_BACKOFF_BASE": "5m", "OUTBOX_RETRY_BACKOFF_CAP": "10m", "GORACE": noRaceExitSleep["GORACE"]}
	a := startAgent(t, dir, unusedEndpoint, kafkaEnv(c, long))
	body, ids := trackBatch("kterm", 20)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	// The first attempt fails (after kgo's few retries inside it); the worker then waits out a
	// backoff of minutes.
	a.waitLog(t, 20*time.Second, "NOT_ENOUGH_REPLICAS", "path=backoff")
	a.signal(t, syscall.SIGTERM)
	code, took := a.wait(t, 10*time.Second)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if limit := shutdownTimeout + time.Second; took > limit {
		t.Errorf("exit took %s after SIGTERM, want at most shutdown.timeout + 1s = %s", took, limit)
	}

	fault.Remove() // the cluster recovers
	startAgent(t, dir, unusedEndpoint, kafkaEnv(c, nil))
	if missing := reader.waitAll(ids, 20*time.Second); missing > 0 {
		t.Fatalf("after restart %d of %d events never reached the topic", missing, len(ids))
	}
}

func TestKafka_SASL_Delivers_StatusNamesTheDestination_PasswordNeverShown(t *testing.T) {
	const password = "s3cret-pw"
	c := startKafka(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "outbox", password))
	reader := readKafka(t, c, kgo.SASL(scram.Auth{User: "outbox", Pass: password}.AsSha256Mechanism()))
	env := kafkaEnv(c, map[string]string{
		"OUTBOX_UPLOAD_KAFKA_SASL_MECHANISM": "scram-sha-256",
		"OUTBOX_UPLOAD_KAFKA_SASL_USERNAME":  "outbox",
		"OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD":  password,
	})
	a := startAgent(t, t.TempDir(), unusedEndpoint, env)
	body, ids := trackBatch("ksasl", 10)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	if missing := reader.waitAll(ids, 15*time.Second); missing > 0 {
		t.Fatalf("%d of %d events never reached the topic", missing, len(ids))
	}
	resp, err := http.Get(a.url + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	status := string(raw)
	if !strings.Contains(status, `"kafka"`) {
		t.Errorf("status does not name the kafka destination: %s", status)
	}
	code, out, stderr := runCLI(t, t.TempDir(), env, "", "config")
	if code != 0 || !strings.Contains(out, "<redacted>") {
		t.Errorf("outbox config: exit %d, output:\n%s%s", code, out, stderr)
	}
	for where, text := range map[string]string{"status": status, "agent logs": a.stderr.String(), "outbox config": out + stderr} {
		if strings.Contains(text, password) {
			t.Errorf("the SASL password shows in %s", where)
		}
	}
}

func TestKafka_Linking_UploaderHasNoFranzGo_TheProductHasNoKfake(t *testing.T) {
	tests := []struct{ pkg, forbidden string }{
		{"github.com/outboxhq/outbox/pkg/uploader", "github.com/twmb/franz-go"},
		{"github.com/outboxhq/outbox/pkg/agent", "github.com/twmb/franz-go"},
		{"github.com/outboxhq/outbox/cmd/outbox", "github.com/twmb/franz-go/pkg/kfake"},
	}
	for _, tt := range tests {
		out, err := exec.Command("go", "list", "-deps", tt.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tt.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, tt.forbidden) {
				t.Errorf("%s links %s", tt.pkg, dep)
			}
		}
	}
}

func TestKafka_SIGTERM_WithAProduceInFlight_ExitsInTime_TheBatchStaysQueued(t *testing.T) {
	c := startKafka(t)
	var hang atomic.Bool
	hang.Store(true)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	held := make(chan struct{}) // closed when the broker holds the first produce
	var holding sync.Once
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if hang.Load() {
			holding.Do(func() { close(held) })
			c.SleepControl(func() { <-release }) // the broker takes the request and never answers
		}
		return nil, nil, false
	})
	reader := readKafka(t, c)
	dir := t.TempDir()
	a := startAgent(t, dir, unusedEndpoint, kafkaEnv(c, noRaceExitSleep))
	body, ids := trackBatch("kflight", 20)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	select {
	case <-held: // the produce is in flight
	case <-time.After(20 * time.Second):
		t.Fatalf("no produce request reached the broker; stderr:\n%s", a.stderr.String())
	}
	a.signal(t, syscall.SIGTERM)
	code, took := a.wait(t, 10*time.Second)
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	t.Logf("SIGTERM to exit with a produce in flight: %s", took.Round(time.Millisecond))
	if limit := shutdownTimeout + time.Second; took > limit {
		t.Errorf("exit took %s after SIGTERM with a produce in flight, want at most shutdown.timeout + 1s = %s", took, limit)
	}
	if !strings.Contains(a.stderr.String(), "events_left=20") {
		t.Errorf("the agent did not leave the 20 events queued; stderr:\n%s", a.stderr.String())
	}

	hang.Store(false)
	once.Do(func() { close(release) })
	startAgent(t, dir, unusedEndpoint, kafkaEnv(c, nil))
	if missing := reader.waitAll(ids, 20*time.Second); missing > 0 {
		t.Fatalf("after restart %d of %d events never reached the topic", missing, len(ids))
	}
}

func TestKafka_WrongSASLPassword_NothingDeadLettered_TheAgentSaysWhy(t *testing.T) {
	c := startKafka(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "outbox", "right-pw"))
	env := kafkaEnv(c, map[string]string{
		"OUTBOX_UPLOAD_KAFKA_SASL_MECHANISM": "scram-sha-512",
		"OUTBOX_UPLOAD_KAFKA_SASL_USERNAME":  "outbox",
		"OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD":  "wrong-pw",
		"OUTBOX_RETRY_MAX_RETRIES":           "1", // a refusal must not spend it: nothing may be dead-lettered
	})
	a := startAgent(t, t.TempDir(), unusedEndpoint, env)
	body, _ := trackBatch("kbadpw", 10)
	if code, resp := post(t, a.url+"/v1/batch", body, false); code != http.StatusOK {
		t.Fatalf("ingest: %d %s", code, resp)
	}
	a.waitLog(t, 15*time.Second, "refuses our credentials")
	// A refused login pauses delivery as a 401 does: the batch stays queued, no retry is
	// counted, and the status says which key to fix.
	var st struct {
		Queue     struct{ Events int64 }
		Dead      struct{ Events int64 }
		Retry     struct{ Attempt int }
		AuthPause struct {
			Paused    bool
			Key, Code string
		} `json:"auth_pause"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(a.url + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.AuthPause.Paused || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Queue.Events != 10 || st.Dead.Events != 0 || st.Retry.Attempt != 0 || !st.AuthPause.Paused ||
		st.AuthPause.Key != "upload.kafka.sasl" || !strings.Contains(strings.ToLower(st.AuthPause.Code), "sasl") {
		t.Fatalf("status: queued %d, dead %d, attempt %d, auth_pause %+v; want 10, 0, 0 and paused on a SASL refusal naming upload.kafka.sasl",
			st.Queue.Events, st.Dead.Events, st.Retry.Attempt, st.AuthPause)
	}
	if n := strings.Count(a.stderr.String(), "refuses our credentials"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once (until the next probe, a minute away)", n)
	}
	if strings.Contains(a.stderr.String(), "wrong-pw") {
		t.Error("the agent's log shows the password")
	}
}

// Two apps through one agent that delivers to Kafka: app-a names its own topic, app-b does not.
// Every record carries its source in the outbox-source header; app-a's topic holds only
// app-a's events, and upload.kafka.topic only app-b's.
func TestKafka_TwoSources_EveryRecordNamesItsSource_ASourcesTopicGetsOnlyItsEvents(t *testing.T) {
	c := startKafka(t, kfake.SeedTopics(3, "app-a.events"))
	env := kafkaEnv(c, map[string]string{
		"OUTBOX_SOURCES_APP_A_WRITE_KEYS": "wk-app-a",
		"OUTBOX_SOURCES_APP_A_TOPIC":      "app-a.events",
		"OUTBOX_SOURCES_APP_B_WRITE_KEYS": "wk-app-b",
		"OUTBOX_BATCH_MAX_EVENTS":         "7",
	})
	a := startAgent(t, t.TempDir(), unusedEndpoint, env)
	sent := 0
	for round := range 3 {
		for _, key := range []string{"wk-app-a", "wk-app-b"} {
			if code, resp := postKey(t, a.url+"/v1/batch", key, keyedBatch(key, round, 10)); code != http.StatusOK {
				t.Fatalf("ingest with %s: %d %s", key, code, resp)
			}
			sent += 10
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(kafkaTopic, "app-a.events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxFor(t, 20*time.Second)
	wantTopic := map[string]string{"wk-app-a": "app-a.events", "wk-app-b": kafkaTopic}
	wantSource := map[string]string{"wk-app-a": "app-a", "wk-app-b": "app-b"}
	seen := map[string]bool{}
	for len(seen) < sent {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d events read back; stderr:\n%s", len(seen), sent, a.stderr.String())
		}
		fs.EachRecord(func(r *kgo.Record) {
			id := string(r.Key) // the messageId, which starts with the key the event was sent with
			key, _, _ := strings.Cut(id, "~")
			var sources []string
			for _, h := range r.Headers {
				if h.Key == "outbox-source" {
					sources = append(sources, string(h.Value))
				}
			}
			if r.Topic != wantTopic[key] {
				t.Errorf("event %s (sent with %s) is in topic %s, want %s", id, key, r.Topic, wantTopic[key])
			}
			if len(sources) != 1 || sources[0] != wantSource[key] {
				t.Errorf("event %s has outbox-source headers %q, want exactly [%s]", id, sources, wantSource[key])
			}
			seen[id] = true
		})
	}
	if strings.Contains(a.stderr.String(), "wk-app") {
		t.Errorf("the agent's log shows a write key:\n%s", a.stderr.String())
	}
}
