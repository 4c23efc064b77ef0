package agent_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/outboxhq/outbox/pkg/sink"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// BenchmarkIngestBatch measures durable ingest through POST /v1/batch: 100 events of about
// 500 bytes per request, 8 concurrent clients, queue.sync: always. One op is one request.
func BenchmarkIngestBatch(b *testing.B) {
	const perRequest, clients = 100, 8
	h := start(b, setup{
		sinkOpts: sink.Options{DiscardEvents: true, NoValidate: true},
		upload: func(c *uploader.Config) {
			c.Queue.Sync = "always"
			c.Queue.MaxBytes = 8 << 30
		},
	})
	var sb strings.Builder
	sb.WriteString(`{"batch":[`)
	for i := range perRequest {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"type":"track","userId":"user-%d","event":"Order Completed","properties":`+
			`{"orderId":"o-%d","total":42.5,"currency":"EUR","coupon":"SPRING","items":%q},`+
			`"context":{"ip":"203.0.113.7","userAgent":"bench/1.0","locale":"en-GB"}}`,
			i, i, strings.Repeat("sku-123,", 30))
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())

	bodies := make([][]byte, clients)
	for i := range bodies {
		bodies[i] = body
	}
	b.SetBytes(int64(len(body)))
	postBodies(b, h.url+"/v1/batch", bodies)
	b.ReportMetric(float64(b.N*perRequest)/b.Elapsed().Seconds(), "events/s")
}

// postBodies resets the timer, then has one client per body POST it to url until b.N requests
// are sent in all, stops the timer and fails the benchmark if any request failed or was not
// answered 200.
func postBodies(b *testing.B, url string, bodies [][]byte) {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: len(bodies)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var failed, next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, body := range bodies {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res, err := hc.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
}
