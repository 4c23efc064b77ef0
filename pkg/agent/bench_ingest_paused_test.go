package agent_test

import (
	"net/http"
	"testing"

	"github.com/outboxhq/outbox/pkg/event/eventtest"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// BenchmarkIngestPaused measures durable ingest alone: the worker is paused (the sink answers
// its first upload 429 with Retry-After: 300, so nothing is deleted while the clock runs),
// 8 clients each POST /v1/batch with their own pre-built body of 100 eventtest.Track events
// (535 bytes), queue.sync: always. One op is one request. It is the in-process twin of
// outbox-bench's agent ingest row; run it with -cpuprofile/-mutexprofile/-blockprofile/-trace
// to see where the agent's time goes.
func BenchmarkIngestPaused(b *testing.B) {
	const perRequest, clients = 100, 8
	h := start(b, setup{
		faults: "429:ra=300:default",
		upload: func(c *uploader.Config) {
			c.Queue.Sync = "always"
			c.Queue.MaxBytes = 8 << 30
		},
	})
	bodies := make([][]byte, clients)
	for i := range bodies {
		bodies[i] = eventtest.Batch(perRequest, i*perRequest, eventtest.Track)
	}
	// Park the worker: one upload that gets the 429, before the clock starts.
	if r := h.post("/v1/batch", string(bodies[0])); r.code != http.StatusOK {
		b.Fatalf("warm-up ingest: %d %s", r.code, r.body)
	}
	_ = h.post("/v1/flush?wait=5s", "")

	commits0, commitSecs0 := commitHistogram(b, h)
	b.SetBytes(int64(len(bodies[0])))
	postBodies(b, h.url+"/v1/batch", bodies)
	if got := h.sink.Events(); len(got) != 0 {
		b.Fatalf("the sink accepted %d events; the worker was meant to be paused", len(got))
	}
	b.ReportMetric(float64(b.N*perRequest)/b.Elapsed().Seconds(), "events/s")
	commits, commitSecs := commitHistogram(b, h)
	if n := commits - commits0; n > 0 {
		b.ReportMetric(float64(b.N*perRequest)/float64(n), "events/commit")
		b.ReportMetric((commitSecs-commitSecs0)*1e3/float64(n), "ms/commit")
		// The writer's share of wall time spent inside commits: near 1, the writer is the bound.
		b.ReportMetric((commitSecs-commitSecs0)/b.Elapsed().Seconds(), "writer-busy")
	}
}

// commitHistogram returns the count and sum of outbox_store_commit_duration_seconds.
func commitHistogram(tb testing.TB, h *harness) (count uint64, sum float64) {
	tb.Helper()
	mfs, err := h.metrics.Registry().Gather()
	if err != nil {
		tb.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "outbox_store_commit_duration_seconds" {
			hist := mf.GetMetric()[0].GetHistogram()
			return hist.GetSampleCount(), hist.GetSampleSum()
		}
	}
	tb.Fatal("no outbox_store_commit_duration_seconds metric")
	return 0, 0
}
