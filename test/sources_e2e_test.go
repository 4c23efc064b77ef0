package test_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// End-to-end tests of several sources against the built binary: real SDK clients, kill -9
// under collector faults, and relay mode at its sources.max.

// uploadRoute is where and with which write key the events of one ingest key must be uploaded.
type uploadRoute struct {
	key       string // the upload's Basic auth username
	collector string // the name of the collector (a sink) the upload must reach
}

// checkRoutes fails when any upload a collector received (accepted, refused, reset or cut
// short alike) carries an event whose ingest key is not routed to that collector and that
// upload's key, or an event whose bytes name another ingest key. owner maps a messageId to
// the ingest key it was sent with; routes maps an ingest key to its upload. It returns the
// events accepted per ingest key, duplicates included.
func checkRoutes(t *testing.T, collectors map[string]*sink.Server, owner func(id string) string, routes map[string]uploadRoute) map[string]int {
	t.Helper()
	accepted := map[string]int{}
	for name, s := range collectors {
		for _, r := range s.Requests() {
			got := uploadRoute{key: keyOfRequest(t, r), collector: name}
			for i, id := range r.MessageIDs {
				sentWith := owner(id)
				want, ok := routes[sentWith]
				if !ok {
					t.Fatalf("upload %d to %s (key %q, %s) carries event %q, sent with ingest key %q, which selects no source",
						r.Seq, name, got.key, r.Outcome, id, sentWith)
				}
				if got != want {
					t.Fatalf("upload %d went to %s with key %q (%s) carrying event %q sent with ingest key %q, whose source uploads to %s with key %q",
						r.Seq, got.collector, got.key, r.Outcome, id, sentWith, want.collector, want.key)
				}
				for other := range routes {
					if other != "" && other != sentWith && i < len(r.Events) && bytes.Contains(r.Events[i], []byte(other)) {
						t.Fatalf("upload %d to %s: event %q sent with %q names another ingest key %q: %s", r.Seq, name, id, sentWith, other, r.Events[i])
					}
				}
				if r.Outcome == sink.OutcomeAccepted {
					accepted[sentWith]++
				}
			}
		}
	}
	return accepted
}

// waitRouted waits up to d for each id to reach the collector its ingest key is routed to,
// and returns how many did not.
func waitRouted(t *testing.T, collectors map[string]*sink.Server, ids []string, routes map[string]uploadRoute, d time.Duration) (missing int) {
	t.Helper()
	by := map[string][]string{}
	for _, id := range ids {
		c := routes[keyOfID(id)].collector
		by[c] = append(by[c], id)
	}
	deadline := time.Now().Add(d)
	for c, ids := range by {
		missing += waitDelivered(t, collectors[c], ids, max(time.Until(deadline), time.Millisecond))
	}
	return missing
}

// Two unmodified @segment/analytics-node clients, each with its own write key, send at the
// same time through one agent in relay mode: every upload carries exactly one of the keys and
// only the events of the client that sent with it, and every event arrives.
func TestSourcesE2E_TwoAnalyticsNodeClientsInRelayMode_EachUploadCarriesOneKeyAndOnlyItsClientsEvents(t *testing.T) {
	modules := analyticsNodeModules(t)
	s := sinktest.Start(t, sink.Options{})
	// Batches smaller than what arrives, so that both clients' events sit in the queue
	// together and the worker has to keep them apart.
	a := startAgent(t, t.TempDir(), s.URL()+"/v1/batch", map[string]string{
		"OUTBOX_SOURCES_RELAY": "true", "OUTBOX_BATCH_MAX_EVENTS": "15", "OUTBOX_UPLOAD_WRITE_KEY": "wk-default"})
	keys := []string{"wk-sdk-shop", "wk-sdk-blog"}
	const events = 80

	runs := make([]sdkRun, len(keys))
	t.Run("clients", func(t *testing.T) {
		for i, key := range keys {
			t.Run(key, func(t *testing.T) {
				t.Parallel() // both clients send at once; the group returns when both are done
				runs[i] = runSDK(t, modules, a.url, key, "", events)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	owner := map[string]string{} // messageId → the write key of the client that sent it
	var ids []string
	for i, run := range runs {
		for _, e := range run.Events {
			if e.Error != "" || e.ID == "" {
				t.Fatalf("client %s: event %q: error %q", keys[i], e.ID, e.Error)
			}
			owner[e.ID] = keys[i]
			ids = append(ids, e.ID)
		}
		if len(run.Emitted) != 0 {
			t.Fatalf("client %s emitted errors: %q", keys[i], run.Emitted)
		}
	}
	if len(owner) != len(keys)*events {
		t.Fatalf("the clients reported %d distinct messageIds, want %d", len(owner), len(keys)*events)
	}
	if missing := waitDelivered(t, s, ids, 20*time.Second); missing != 0 {
		t.Fatalf("%d of the clients' %d events did not reach the collector", missing, len(ids))
	}
	routes := map[string]uploadRoute{}
	for _, key := range keys {
		routes[key] = uploadRoute{key: key, collector: "collector"}
	}
	got := checkRoutes(t, map[string]*sink.Server{"collector": s}, func(id string) string { return owner[id] }, routes)
	for _, key := range keys {
		if got[key] != events {
			t.Errorf("events delivered with key %s: %d, want %d", key, got[key], events)
		}
	}
	if log := a.stderr.String(); strings.Contains(log, "wk-sdk") {
		t.Errorf("the agent's log shows a write key:\n%s", log)
	}
	a.signal(t, syscall.SIGTERM)
	if code, _ := a.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// postIngestKey sends body with key as the Basic auth username and returns the status, the
// Retry-After header and the body; err when the agent did not answer (it was killed).
func postIngestKey(url, key string, body []byte) (code int, retryAfter, text string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.SetBasicAuth(key, "")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(b.String()), nil
}

// keyedLoad is producers sending batches with their ingest keys until stopped or the agent is
// gone, recording the ids of every acknowledged batch across the agent's kills.
type keyedLoad struct {
	mu    sync.Mutex
	acked []string
}

// run starts perKey producers per key, each POSTing at most maxBatches batches of perBatch
// events whose messageIds are key~prefix-g<G>-n<N>-<i>. requests counts each
// key's acknowledged requests; wait waits for the producers to return.
func (l *keyedLoad) run(url string, keys []string, perKey, perBatch, maxBatches int, prefix string, stop <-chan struct{}) (requests map[string]*atomic.Int64, wait func()) {
	requests = map[string]*atomic.Int64{}
	var wg sync.WaitGroup
	for _, key := range keys {
		n := new(atomic.Int64)
		requests[key] = n
		for g := range perKey {
			wg.Go(func() {
				for b := range maxBatches {
					select {
					case <-stop:
						return
					default:
					}
					body, ids := trackBatch(fmt.Sprintf("%s~%s-g%d-n%d", key, prefix, g, b), perBatch)
					code, _, _, err := postIngestKey(url, key, body)
					if err != nil {
						return // the agent is gone
					}
					if code == http.StatusOK {
						l.mu.Lock()
						l.acked = append(l.acked, ids...)
						l.mu.Unlock()
						n.Add(1)
					}
				}
			})
		}
	}
	return requests, wg.Wait
}

// keyOfID is the ingest key a messageId of keyedBatch or keyedLoad was sent with.
func keyOfID(id string) string {
	key, _, _ := strings.Cut(id, "~")
	return key
}

// Three sources — two named ones, each with its own upload key and its own collector (as an
// EU source has its own region's endpoint), and a relay source — take events while every
// collector answers some uploads with 503, 429, a reset or no answer at all, and the agent is
// killed with SIGKILL three times and restarted on the same data directory: every acknowledged
// event arrives, and no upload, however it ended, ever carried an event to another source's
// collector or under another source's key.
func TestSourcesE2E_KillNineUnderFaults_ThreeSources_EveryAckedEventArrivesUnderItsOwnSourcesKey(t *testing.T) {
	collectors := map[string]*sink.Server{}
	for i, name := range []string{"main", "shop", "blog"} {
		// Each fault once first, so that every collector shows each, then at random.
		collectors[name] = sinktest.StartScript(t, fmt.Sprintf(
			"503,hang,reset-after-body,429:ra=1,503:12%%,429:3%%:ra=1,reset-after-body:5%%,hang:3%%,seed=%d", 34+i))
	}
	endpoint := func(name string) string { return collectors[name].URL() + "/v1/batch" }
	env := map[string]string{
		"OUTBOX_SOURCES_RELAY":                 "true",
		"OUTBOX_UPLOAD_WRITE_KEY":              "up-default",
		"OUTBOX_SOURCES_SHOP_WRITE_KEYS":       "wk-shop-in",
		"OUTBOX_SOURCES_SHOP_UPLOAD_WRITE_KEY": "up-shop",
		"OUTBOX_SOURCES_SHOP_ENDPOINT":         endpoint("shop"),
		"OUTBOX_SOURCES_BLOG_WRITE_KEYS":       "wk-blog-in",
		"OUTBOX_SOURCES_BLOG_UPLOAD_WRITE_KEY": "up-blog",
		"OUTBOX_SOURCES_BLOG_ENDPOINT":         endpoint("blog"),
		"OUTBOX_BATCH_MAX_EVENTS":              "20",
		"OUTBOX_UPLOAD_TIMEOUT":                "500ms", // a hung upload is a timeout
		"OUTBOX_RETRY_RETRY_AFTER_CAP":         "300ms", // a 429's Retry-After: 1 holds for 300ms
	}
	routes := map[string]uploadRoute{
		"wk-shop-in":  {key: "up-shop", collector: "shop"},
		"wk-blog-in":  {key: "up-blog", collector: "blog"},
		"wk-relay-in": {key: "wk-relay-in", collector: "main"}, // a relay source uploads with its own key
	}
	uploads := func() (n int64) {
		for _, s := range collectors {
			n += s.Stats().Requests
		}
		return n
	}
	keys := []string{"wk-shop-in", "wk-blog-in", "wk-relay-in"}
	dir := t.TempDir()
	var load keyedLoad
	// About 3,000 events: the kill comes after 30 acknowledged requests of each key in the
	// cycle, while the producers still send (at most 3 × 3 keys × 2 producers × 40 batches × 10
	// events in all).
	const cycles, perKey, perBatch, maxBatches, killAfter = 3, 2, 10, 40, 30
	for cycle := range cycles {
		a := startAgent(t, dir, endpoint("main"), env)
		killed := make(chan struct{})
		requests, wait := load.run(a.url+"/v1/batch", keys, perKey, perBatch, maxBatches, fmt.Sprintf("c%d", cycle), killed)
		// Kill once every source has had requests acknowledged in this cycle and uploads flow.
		uploadsBefore := uploads()
		deadline := time.Now().Add(20 * time.Second)
		for {
			enough := uploads() > uploadsBefore
			for _, n := range requests {
				enough = enough && n.Load() >= killAfter
			}
			if enough {
				break
			}
			if time.Now().After(deadline) {
				close(killed)
				wait()
				t.Fatalf("cycle %d: acknowledged requests per key after 20s: shop %d, blog %d, relay %d", cycle,
					requests["wk-shop-in"].Load(), requests["wk-blog-in"].Load(), requests["wk-relay-in"].Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
		a.signal(t, syscall.SIGKILL)
		close(killed)
		if code, _ := a.wait(t, 5*time.Second); code != -1 {
			t.Fatalf("cycle %d: the agent exited with %d, want killed by SIGKILL", cycle, code)
		}
		wait()
	}
	acked := load.acked

	// The last start drains under the same faults.
	a := startAgent(t, dir, endpoint("main"), env)
	missing := waitRouted(t, collectors, acked, routes, 40*time.Second)
	var st sink.Stats
	for _, s := range collectors {
		cs := s.Stats()
		if cs.Rejected < 2 || cs.Resets == 0 || cs.Canceled == 0 {
			t.Errorf("a collector injected too few faults to test anything: %+v", cs)
		}
		st.Requests, st.Rejected, st.Resets, st.Canceled = st.Requests+cs.Requests, st.Rejected+cs.Rejected, st.Resets+cs.Resets, st.Canceled+cs.Canceled
		st.Events, st.Unique, st.Duplicates = st.Events+cs.Events, st.Unique+cs.Unique, st.Duplicates+cs.Duplicates
	}
	t.Logf("%d kills: %d acknowledged events, %d uploads (%d rejected, %d reset, %d cut short), %d events accepted (%d unique, %d duplicates)",
		cycles, len(acked), st.Requests, st.Rejected, st.Resets, st.Canceled, st.Events, st.Unique, st.Duplicates)
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged events never reached their source's collector", missing, len(acked))
	}
	got := checkRoutes(t, collectors, keyOfID, routes)
	for _, key := range keys {
		if got[key] == 0 {
			t.Errorf("no event sent with %s was delivered", key)
		}
	}
	if log := a.stderr.String(); strings.Contains(log, "wk-relay-in") || strings.Contains(log, "up-shop") {
		t.Errorf("the agent's log shows a write key:\n%s", log)
	}
}

// refusedTotal is outbox_sources_refused_total on the agent's /metrics, -1 when it is absent.
func refusedTotal(t *testing.T, url string) int {
	t.Helper()
	for line := range strings.SplitSeq(metric(t, url), "\n") {
		if v, ok := strings.CutPrefix(line, "outbox_sources_refused_total "); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				t.Fatalf("outbox_sources_refused_total %q: %v", v, err)
			}
			return n
		}
	}
	return -1
}

// In relay mode with sources.max 4 (the default source, a named source and two relay
// sources), a new write key gets 429 with Retry-After and a message naming the count and the
// limit, is counted in outbox_sources_refused_total, and none of its events is stored (not
// even in the default source); the earlier keys, the named one and no key at all keep
// working, and after a kill -9 the relay sources are still known and the limit still holds.
func TestSourcesE2E_RelayPastSourcesMax_NewKeyGets429AndIsCounted_EarlierKeysKeepWorking(t *testing.T) {
	s := sinktest.Start(t, sink.Options{})
	env := map[string]string{
		"OUTBOX_SOURCES_RELAY":                 "true",
		"OUTBOX_SOURCES_MAX":                   "4",
		"OUTBOX_UPLOAD_WRITE_KEY":              "up-default",
		"OUTBOX_SOURCES_SHOP_WRITE_KEYS":       "wk-shop-in",
		"OUTBOX_SOURCES_SHOP_UPLOAD_WRITE_KEY": "up-shop",
	}
	routes := map[string]uploadRoute{
		"":             {key: "up-default", collector: "collector"},
		"wk-shop-in":   {key: "up-shop", collector: "collector"},
		"wk-relay-one": {key: "wk-relay-one", collector: "collector"},
		"wk-relay-two": {key: "wk-relay-two", collector: "collector"},
	}
	working := []string{"wk-shop-in", "wk-relay-one", "wk-relay-two", ""}
	dir := t.TempDir()
	a := startAgent(t, dir, s.URL()+"/v1/batch", env)

	var sent []string // the ids of every acknowledged event
	send := func(a *agent, round int) {
		t.Helper()
		for _, key := range working {
			body, ids := trackBatch(fmt.Sprintf("%s~%d", key, round), 5)
			code, _, text, err := postIngestKey(a.url+"/v1/batch", key, body)
			if err != nil || code != http.StatusOK {
				t.Fatalf("round %d, ingest key %q: %d %s (%v)", round, key, code, text, err)
			}
			sent = append(sent, ids...)
		}
	}
	refuse := func(a *agent, key string) {
		t.Helper()
		code, retryAfter, text, err := postIngestKey(a.url+"/v1/batch", key, keyedBatch(key, 0, 3))
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusTooManyRequests || retryAfter == "" ||
			!strings.Contains(text, "4 sources, sources.max is 4") || strings.Contains(text, key) {
			t.Fatalf("a new relay key past sources.max 4: %d (Retry-After %q) %s; want 429 with Retry-After naming the count and the limit, not the key",
				code, retryAfter, text)
		}
	}

	send(a, 0) // the relay sources are made here
	refuse(a, "wk-relay-three")
	refuse(a, "wk-relay-four")
	refuse(a, "wk-relay-three") // refused again: the refusal made no source
	if n := refusedTotal(t, a.url); n != 3 {
		t.Fatalf("outbox_sources_refused_total %d after 3 refusals, want 3", n)
	}
	send(a, 1) // the earlier keys keep working past the limit
	if missing := waitDelivered(t, s, sent, 10*time.Second); missing != 0 {
		t.Fatalf("%d of %d acknowledged events not delivered", missing, len(sent))
	}

	// Killed and restarted: the relay sources come back from the data file, so their keys
	// still work and still count against sources.max; the counter starts again at 0.
	a.signal(t, syscall.SIGKILL)
	a.wait(t, 5*time.Second)
	logs := []string{a.stderr.String()}
	a = startAgent(t, dir, s.URL()+"/v1/batch", env)
	if n := refusedTotal(t, a.url); n != 0 {
		t.Fatalf("outbox_sources_refused_total %d after a restart, want 0", n)
	}
	send(a, 2)
	refuse(a, "wk-relay-four")
	if n := refusedTotal(t, a.url); n != 1 {
		t.Fatalf("outbox_sources_refused_total %d after a refusal, want 1", n)
	}
	if missing := waitDelivered(t, s, sent, 10*time.Second); missing != 0 {
		t.Fatalf("%d of %d acknowledged events not delivered after the restart", missing, len(sent))
	}
	// A refused key's events select no source: checkRoutes fails on any of them.
	checkRoutes(t, map[string]*sink.Server{"collector": s}, keyOfID, routes)
	if st := s.Stats(); st.Unique != int64(len(sent)) {
		t.Errorf("the collector has %d distinct events, want the %d acknowledged", st.Unique, len(sent))
	}
	for _, log := range append(logs, a.stderr.String()) {
		if !strings.Contains(log, "sources.max") || strings.Contains(log, "wk-relay") {
			t.Errorf("the agent's log lacks the refusal or shows a write key:\n%s", log)
		}
	}
}
